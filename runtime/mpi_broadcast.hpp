#pragma once
// A polled broadcast of a string over the runtime's communicator, for start-up exchanges
// (the scheduler's contact address). Polled like MpiEnvironment::barrier(): no rank sits in
// a blocking MPI call while it waits (they spin in MPICH 4.0).
#include <taskwire/runtime/mpi_environment.hpp>

#include <string>

namespace taskwire::runtime {

/// Collective over env.comm(): every rank calls it; returns `root`'s `value` on every rank.
/// Throws std::runtime_error on an MPI error or after env.shutdown().
std::string broadcast(MpiEnvironment& env, const std::string& value, int root);

}  // namespace taskwire::runtime
