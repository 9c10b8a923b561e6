#pragma once
// The worker's memory monitor (memory_limits.hpp): a timer on the worker's strand compares
// the process's memory (runtime::process_memory_bytes: its resident set less the freed pages
// the allocator keeps for reuse) with the limit's thresholds, spills results past `spill`,
// pauses the worker past `pause` (telling the scheduler) and ends it past `terminate`.
// Spilling past `target` happens in the DataStore itself, as results arrive. On the worker's
// strand only. Not installed API.
#include <taskwire/worker/scheduler_link.hpp>
#include <taskwire/worker/worker_core.hpp>

#include <cstdint>

namespace taskwire::worker {

class MemoryMonitor {
 public:
  MemoryMonitor(WorkerCore& core, WorkerActions& actions, SchedulerLink& link)
      : core_(core), actions_(actions), link_(link), timer_(core.strand) {}
  MemoryMonitor(const MemoryMonitor&) = delete;
  MemoryMonitor& operator=(const MemoryMonitor&) = delete;

  /// Checks every MemoryOptions::monitor_interval from now on; nothing without a limit.
  void start();
  void stop() { timer_.cancel(); }

 private:
  void check();
  void give_back_kept_pages(std::uint64_t memory);
  std::uint64_t spill_for_process_memory(std::uint64_t memory);
  void update_pause(std::uint64_t memory);
  void terminate_for_memory(std::uint64_t memory);

  WorkerCore& core_;
  WorkerActions& actions_;
  SchedulerLink& link_;
  asio::steady_timer timer_;
  bool spill_warned_ = false;  ///< process memory past `spill` with nothing left to spill
};

}  // namespace taskwire::worker
