#pragma once
// The blocked-array workload: sum((X + X^T)^T) for a random N x N matrix of doubles split into
// B x B blocks spread over the workers. Computing block (i, j) of (X + X^T)^T needs blocks
// (i, j) and (j, i), so about half the blocks move between workers. Run under mpiexec with at
// least 3 ranks: one cluster per backend in turn (rank 0 scheduler, rank 1 client, the rest
// workers), on the same data, with the result checked against a direct computation.
#include <string>
#include <vector>

namespace taskwire::bench {

struct ArrayOptions {
  std::vector<std::string> backends{"mpi", "tcp"};  ///< transports, run in this order
  int n = 20'000;                                   ///< matrix order
  int blocks = 8;                                   ///< blocks per side
  unsigned nthreads = 1;                            ///< threads per worker rank
  unsigned long long seed = 42;
  int repeats = 3;  ///< runs per backend; the median is reported (the first pays for warm-up)
  bool check = true;  ///< compare with a direct computation on the client rank
  std::string csv;  ///< rows backend,n,blocks,workers,seconds,result
};

/// Collective over the MPI job; prints the table (and the MPI/TCP ratio) on the client rank.
/// Returns an exit code (non-zero when a result is wrong).
int run_array(const ArrayOptions& options);

}  // namespace taskwire::bench
