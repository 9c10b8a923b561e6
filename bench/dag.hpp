#pragma once
// taskwire-bench dag: task graphs that move data between workers (bench/dag_workloads.hpp),
// over each transport in the same launch. Run under mpiexec.mpich -n 4 (rank 0 scheduler,
// rank 1 client, the rest workers). Rounds alternate the transports (a cluster per transport
// per round), so a slow minute of the machine falls on both; medians over the rounds.
#include "bench/dag_workloads.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace taskwire::bench {

struct DagOptions {
  std::vector<std::string> backends{"mpi", "tcp"};  ///< transports, alternated each round
  std::vector<std::string> workloads{"stencil", "matmul", "tree", "shuffle"};
  std::vector<std::size_t> sizes{1u << 10, 16u << 10, 128u << 10, 1u << 20, 8u << 20};
  DagShape shape;
  int repeats = 5;        ///< rounds; the median per (backend, workload, size) is reported
  unsigned nthreads = 1;  ///< threads per worker rank
  bool check = true;      ///< compare every result with a direct computation in the client
  std::string csv;        ///< rows backend,workload,bytes,tasks,seconds (medians)
};

/// Collective over the MPI job; prints the table (MPI / TCP per row) on the client rank.
/// Returns an exit code: non-zero when a result is wrong or a cluster failed.
int run_dag(const DagOptions& options);

}  // namespace taskwire::bench
