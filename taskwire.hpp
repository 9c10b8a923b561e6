#pragma once
// taskwire: the umbrella header for programs using the runtime. The MPI launch API
// (taskwire::mpi: initialize, run_cluster, MpiEnvironment) is <taskwire/mpi.hpp>, not included
// here: it pulls <mpi.h>, which a program that does not launch under mpiexec should not need.
#include <taskwire/client/client.hpp>
#include <taskwire/client/progress.hpp>
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/graph/execute.hpp>
#include <taskwire/launch/slurm/slurm_cluster.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/runtime/force_exit.hpp>
#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/runtime/serialize.hpp>
#include <taskwire/runtime/serialize_std.hpp>
