#pragma once
// taskwire::mpi, the MPI launch API: a whole cluster inside one `mpiexec.mpich` launch
// (docs/guide/mpi-launch.md).
//   - initialize, initialize_pool, run_cluster, Session, LaunchOptions, Layout, Transport
//     (launch/mpi/launch.hpp);
//   - MpiEnvironment, MpiEnvironmentOptions, MpiThreadLevel: the one object owning MPI in a
//     process, which run_cluster and the mpi:// backend need (comm/mpi/mpi_environment.hpp);
//   - broadcast, all_on_one_host, default_tcp_host: polled collectives over its communicator
//     (comm/mpi/mpi_broadcast.hpp).
// It pulls <mpi.h> (MpiEnvironment hands out an MPI_Comm), so a program including it builds
// with MPI's headers. That is why <taskwire/taskwire.hpp> does not include it: a program that
// only talks to a cluster, or runs one of separate daemons, builds without them.
#include <taskwire/launch/mpi/launch.hpp>
#include <taskwire/comm/mpi/mpi_broadcast.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>
