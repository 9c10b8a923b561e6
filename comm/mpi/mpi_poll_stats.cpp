#include <taskwire/comm/mpi/mpi_poll_stats.hpp>

namespace taskwire::comm::mpi {

PollCounters& poll_counters() noexcept {
  static PollCounters counters;
  return counters;
}

std::array<PollMetric, 5> poll_metrics() noexcept {
  const auto& c = poll_counters();
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return {{{"mpi_poll_turns_total", "MPI poller turns (each probes MPI for messages once).", get(c.turns)},
           {"mpi_poll_sleeps_total", "Sleeps of the MPI poller (timed, or until a peer wakes it).", get(c.sleeps)},
           {"mpi_poll_wakeups_by_peer_total", "MPI poller sleeps ended by a peer's wake-up (eventfd or datagram).",
            get(c.woken_by_peer)},
           {"mpi_poll_wakeups_by_timer_total", "MPI poller sleeps ended by their timer.", get(c.woken_by_timer)},
           {"mpi_poll_wakeups_local_total", "MPI poller sleeps ended by work in this process (a send).",
            get(c.woken_locally)}}};
}

}  // namespace taskwire::comm::mpi
