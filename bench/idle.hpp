#pragma once
// taskwire-bench idle: the CPU each rank uses while a cluster is up and doing nothing. Under
// `mpiexec.mpich -n N` (N >= 3), one cluster per transport in turn (mpi::run_cluster: rank 0
// scheduler, rank 1 client, the rest workers). Once the cluster is up and settled, the client
// rank starts a window of `seconds`: every rank reads its own getrusage CPU time over it, and
// rank 1 gathers and prints the figures. The MPI backend's idle backoff is what this checks:
// an idle rank should use almost no CPU, even with more ranks than cores.
#include <string>
#include <vector>

namespace taskwire::bench {

struct IdleOptions {
  std::vector<std::string> backends{"mpi", "tcp"};  ///< transports, in this order
  double seconds = 5;   ///< the measured window
  double settle = 1;    ///< wait after the cluster is up, before the window starts
  std::string csv;      ///< rows backend,rank,role,seconds,cpu_seconds,cpu_percent
};

/// Collective over the MPI job; rank 1 prints the table. Returns an exit code.
int run_idle(const IdleOptions& options);

}  // namespace taskwire::bench
