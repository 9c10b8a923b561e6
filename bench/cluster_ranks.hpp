#pragma once
// Subcommands that launch a whole cluster (scheduler, client, workers) need 3 ranks or more
// (2 in the pool layout, where the scheduler runs in the client's rank).
#include <taskwire/comm/mpi/mpi_environment.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

namespace taskwire::bench {

/// True when started by mpiexec with more than one rank (hydra's PMI_SIZE), before MPI_Init.
inline bool launched_on_several_ranks() {
  const char* ranks = std::getenv("PMI_SIZE");
  return ranks && std::atoi(ranks) > 1;
}

/// False (after rank 0 said how to launch it) when the job is too small for a cluster: 3 ranks
/// (scheduler, client, workers), or 2 with `pool` (the scheduler runs in the client's rank).
inline bool enough_ranks_for_cluster(const mpi::MpiEnvironment& env, std::string_view subcommand,
                                     int suggested_ranks, bool pool = false) {
  if (env.size() >= (pool ? 2 : 3)) return true;
  if (env.rank() == 0)
    fmt::print(stderr,
               "taskwire-bench {0}: needs at least {2} MPI ranks ({3}, workers): run "
               "`mpiexec.mpich -n {1} taskwire-bench {0}`\n",
               subcommand, suggested_ranks, pool ? 2 : 3,
               pool ? "scheduler and client in one" : "scheduler, client");
  return false;
}

}  // namespace taskwire::bench
