#pragma once
// Process-wide counters of the MPI poll drivers (mpi_poller.hpp): turns, sleeps and what ended
// them, for /metrics (docs/dashboard.md). Relaxed atomics: one increment per turn or sleep.
#include <array>
#include <atomic>
#include <cstdint>

namespace taskwire::comm::mpi {

struct PollCounters {
  std::atomic<std::uint64_t> turns{0};            ///< poller turns (each probes MPI once)
  std::atomic<std::uint64_t> sleeps{0};           ///< sleeps begun, timed or until woken
  std::atomic<std::uint64_t> woken_by_peer{0};    ///< ended by a peer's wake-up (eventfd, datagram)
  std::atomic<std::uint64_t> woken_by_timer{0};   ///< ended by the sleep's timer or the guard
  std::atomic<std::uint64_t> woken_locally{0};    ///< ended by work in this process (a send)
};

/// The one set of this process.
PollCounters& poll_counters() noexcept;

/// A Prometheus metric of the counters: name suffix (after the daemon's prefix), help, value.
struct PollMetric {
  const char* name;
  const char* help;
  std::uint64_t value;
};
std::array<PollMetric, 5> poll_metrics() noexcept;

}  // namespace taskwire::comm::mpi
