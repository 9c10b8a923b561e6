#include <taskwire/worker/memory_monitor.hpp>

#include <taskwire/runtime/process_info.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace taskwire::worker {

void MemoryMonitor::start() {
  const auto& m = core_.options.memory;
  if (m.limit == 0 || core_.closing) return;
  if (m.monitor_interval.count() <= 0) return;
  timer_.expires_after(m.monitor_interval);
  timer_.async_wait([this, held = core_.hold()](error_code ec) {
    if (ec || core_.closing) return;
    check();
    start();
  });
}

void MemoryMonitor::check() {
  const auto& m = core_.options.memory;
  const double limit = static_cast<double>(m.limit);
  std::uint64_t memory = runtime::process_memory_bytes();
  if (memory == 0) return;  // not measurable here
  give_back_kept_pages(memory);
  if (m.terminate > 0 && static_cast<double>(memory) > m.terminate * limit)
    return terminate_for_memory(memory);
  if (m.spill > 0 && static_cast<double>(memory) > m.spill * limit)
    memory = spill_for_process_memory(memory);
  update_pause(memory);
}

// The allocator keeps freed pages for good (malloc_tuning.cpp), which the thresholds do not
// count; but past the first threshold that is on, the resident set itself is given back down
// to what the process holds, so that a worker near its limit keeps no idle memory from its
// neighbours (or its cgroup). Below it, the pages stay for reuse.
void MemoryMonitor::give_back_kept_pages(std::uint64_t memory) {
  const auto& m = core_.options.memory;
  const double first = m.spill > 0 ? m.spill : m.pause > 0 ? m.pause : m.terminate;
  if (first <= 0) return;
  const double threshold = first * static_cast<double>(m.limit);
  if (static_cast<double>(memory) > threshold) return;  // what it holds is past it: spill
  if (static_cast<double>(runtime::resident_set_bytes()) > threshold)
    runtime::release_free_memory();
}

// As Dask's worker memory monitor: spill the least recently used results until as many bytes
// as the process is above `target` (or `spill` if target is off) have gone, then hand the
// freed memory back to the system and measure again.
std::uint64_t MemoryMonitor::spill_for_process_memory(std::uint64_t memory) {
  const auto& m = core_.options.memory;
  const double goal = (m.target > 0 ? m.target : m.spill) * static_cast<double>(m.limit);
  const auto need = static_cast<std::uint64_t>(static_cast<double>(memory) - goal);
  std::uint64_t spilled = 0;
  std::size_t count = 0;
  while (spilled < need) {
    const auto n = core_.data->spill_oldest();
    if (n == 0) break;
    spilled += n;
    ++count;
  }
  runtime::release_free_memory();
  const std::uint64_t now = runtime::process_memory_bytes();
  if (count > 0) {
    spill_warned_ = false;
    spdlog::debug("worker {}: process memory {} past {:.0f}% of its limit {}: spilled {} "
                  "result(s), {}, to {}; now {}",
                  core_.name, format_bytes(memory), m.spill * 100, format_bytes(m.limit), count,
                  format_bytes(spilled), core_.spill_directory.path().string(), format_bytes(now));
  } else if (!spill_warned_ && static_cast<double>(now) > m.spill * static_cast<double>(m.limit)) {
    spill_warned_ = true;  // once per episode: the monitor runs ten times a second
    spdlog::warn("worker {}: process memory {} is past {:.0f}% of its limit {} with no result "
                 "left in memory to spill ({} held on disk): tasks or the process itself "
                 "hold it",
                 core_.name, format_bytes(now), m.spill * 100, format_bytes(m.limit),
                 format_bytes(core_.data->counts().spilled_bytes));
  }
  return now ? now : memory;
}

void MemoryMonitor::update_pause(std::uint64_t memory) {
  const auto& m = core_.options.memory;
  if (m.pause <= 0) return;
  const bool over = static_cast<double>(memory) > m.pause * static_cast<double>(m.limit);
  if (over == core_.state->paused()) return;
  core_.state->set_paused(over);
  // The scheduler then places nothing new here, and may steal what waits.
  link_.send(protocol::Op::worker_status, protocol::WorkerStatus{over});
  if (over) {
    spdlog::warn("worker {}: paused: process memory {} is past {:.0f}% of its limit {}; it "
                 "starts no task and fetches nothing until that falls",
                 core_.name, format_bytes(memory), m.pause * 100, format_bytes(m.limit));
    return;
  }
  spdlog::info("worker {}: resumed: process memory {} is below {:.0f}% of its limit {}", core_.name,
               format_bytes(memory), m.pause * 100, format_bytes(m.limit));
  actions_.handle({});  // start what waited
}

void MemoryMonitor::terminate_for_memory(std::uint64_t memory) {
  const auto& m = core_.options.memory;
  const auto reason = fmt::format(
      "process memory {} is past {:.0f}% of its memory limit {} (--memory-limit; results "
      "held in memory: {})",
      format_bytes(memory), m.terminate * 100, format_bytes(m.limit),
      format_bytes(core_.data->counts().memory_bytes));
  if (!core_.options.nanny) return actions_.begin_close(reason + "; closing the worker", false);
  // Under the nanny: leave at once with the status that asks it for a restart (a close
  // would first wait for running tasks, which may be what holds the memory).
  spdlog::error("worker {}: {}; exiting for the nanny to restart it", core_.name, reason);
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  std::_Exit(kExitMemoryLimit);
}

}  // namespace taskwire::worker
