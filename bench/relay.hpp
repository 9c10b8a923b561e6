#pragma once
// taskwire-bench relay: the floor under a submit-get round trip on this host. Four processes
// play the parts of `taskwire-bench tasks` under mpiexec (client, scheduler, two workers, one
// of them idle) and pass one byte along the round trip's four hops, client -> scheduler ->
// worker -> scheduler -> client, doing no work at all:
//   - sleeping: each process blocks in read() on a pipe, so every hop is a kernel wake-up,
//     as for ranks that sleep when idle (taskwire's MPI and TCP backends);
//   - spinning: each process polls a shared-memory word and calls sched_yield(), so no hop
//     waits for a wake-up, at the price of every process using a core whenever it can.
// No MPI and no taskwire code: what is left of a taskwire round trip above these figures is
// taskwire's own (and the ratio of the two says how much of it the machine imposes).
#include <string>

namespace taskwire::bench {

struct RelayOptions {
  int roundtrips = 20000;  ///< per measurement
  int repeats = 3;         ///< measurements per mode (median reported)
  std::string csv;         ///< rows mode,processes,roundtrips,us_per_roundtrip
};

/// Forks the processes itself (run it without mpiexec). Returns an exit code.
int run_relay(const RelayOptions& options);

}  // namespace taskwire::bench
