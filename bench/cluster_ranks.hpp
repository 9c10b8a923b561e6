#pragma once
// Subcommands that launch a whole cluster (scheduler, client, workers) need 3 ranks or more.
#include <taskwire/runtime/mpi_environment.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

namespace taskwire::bench {

/// True when started by mpiexec with more than one rank (hydra's PMI_SIZE), before MPI_Init.
inline bool launched_on_several_ranks() {
  const char* ranks = std::getenv("PMI_SIZE");
  return ranks && std::atoi(ranks) > 1;
}

/// False (after rank 0 said how to launch it) when the job is too small for a cluster.
inline bool enough_ranks_for_cluster(const runtime::MpiEnvironment& env, std::string_view subcommand,
                                     int suggested_ranks) {
  if (env.size() >= 3) return true;
  if (env.rank() == 0)
    fmt::print(stderr,
               "taskwire-bench {0}: needs at least 3 MPI ranks (scheduler, client, workers): run "
               "`mpiexec.mpich -n {1} taskwire-bench {0}`\n",
               subcommand, suggested_ranks);
  return false;
}

}  // namespace taskwire::bench
