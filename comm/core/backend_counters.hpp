#pragma once
// What a backend counts about itself (an MPI poller's turns and sleeps, say), for the daemons'
// /metrics: the dashboards read it through the Registry, so that they include comm/core and
// never a backend's header.
#include <cstdint>
#include <string>

namespace taskwire::comm {

/// A Prometheus counter: `name` is the suffix after the daemon's prefix
/// ("mpi_poll_turns_total" under "taskwire_scheduler_"), `help` its HELP line.
struct BackendCounter {
  std::string name;
  std::string help;
  std::uint64_t value = 0;
};

}  // namespace taskwire::comm
