#pragma once
// taskwire: the umbrella header for programs using the runtime.
#include <taskwire/client/client.hpp>
#include <taskwire/client/progress.hpp>
#include <taskwire/launch/mpi/launch.hpp>
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/graph/execute.hpp>
#include <taskwire/launch/slurm/slurm_cluster.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/runtime/force_exit.hpp>
#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>
#include <taskwire/runtime/serialize.hpp>
#include <taskwire/runtime/serialize_std.hpp>
