#pragma once
// The UCX settings taskwire makes before it initialises MPI, when the user has not made them.
// docs/mpi-poll-policy.md ("Eager up to 64 KiB") and docs/multi-host.md ("Rendezvous over
// TCP between hosts") have the measurements behind each value.
#include <taskwire/runtime/launch_env.hpp>

#include <string>

namespace taskwire::comm::mpi {

/// Whether the launcher placed the job's ranks on more than one node: hydra's
/// MPI_LOCALNRANKS below the launch's size (launch_env.hpp: PMI's first), or Slurm's
/// SLURM_STEP_NUM_NODES above 1.
bool launched_on_several_nodes(const runtime::EnvLookup& env);

/// The UCX_RNDV_THRESH taskwire sets when the user has not: 4 MiB for a job across nodes
/// without RDMA devices (UCX then talks TCP between them, where a rendezvous moves only while
/// both ranks call into MPI), else 64 KiB.
std::string default_rndv_threshold(const runtime::EnvLookup& env, bool rdma_devices);

/// Whether this machine has RDMA devices (InfiniBand, RoCE: /sys/class/infiniband).
bool has_rdma_devices();

/// Sets the defaults above in this process's environment; values the user set are kept.
void apply_ucx_defaults();

}  // namespace taskwire::comm::mpi
