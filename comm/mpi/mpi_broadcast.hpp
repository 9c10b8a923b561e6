#pragma once
// A polled broadcast of a string over the runtime's communicator, for start-up exchanges
// (the scheduler's contact address). Polled like MpiEnvironment::barrier(): no rank sits in
// a blocking MPI call while it waits (they spin in MPICH 4.0).
#include <taskwire/comm/mpi/mpi_environment.hpp>

#include <string>

namespace taskwire::comm::mpi {

/// Collective over env.comm(): every rank calls it; returns `root`'s `value` on every rank.
/// Throws std::runtime_error on an MPI error or after env.shutdown().
std::string broadcast(MpiEnvironment& env, const std::string& value, int root);

/// Collective over env.comm(): true on every rank when every rank has the same host name.
/// Compares 64-bit hashes of the names (one polled allreduce).
bool all_on_one_host(MpiEnvironment& env);

/// Collective: the host a rank's TCP transport listens on and advertises when none is given:
/// 127.0.0.1 when every rank is on one host (all_on_one_host), else this rank's host name's
/// address (comm::host_name_address(), which throws when there is none).
std::string default_tcp_host(MpiEnvironment& env);

}  // namespace taskwire::comm::mpi

// What programs name (launch/mpi/launch.hpp's namespace).
namespace taskwire::mpi {
using comm::mpi::all_on_one_host;
using comm::mpi::broadcast;
using comm::mpi::default_tcp_host;
}  // namespace taskwire::mpi
