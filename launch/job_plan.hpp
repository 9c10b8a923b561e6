#pragma once
// What a job cluster submits, as pure functions of its options (tests check them without a
// batch system): the workers' command line and the job's JobSpec.
#include <taskwire/launch/batch_system.hpp>
#include <taskwire/launch/job_cluster.hpp>

#include <chrono>
#include <string>

namespace taskwire::launch {

/// Workers one job holds: options.processes on each of its options.nodes nodes.
unsigned workers_per_job(const JobClusterOptions& options);

/// Throws std::invalid_argument for several nodes where `batch` has no launcher on each
/// node (BatchSystem::on_each_node).
void check_nodes(const JobClusterOptions& options, const BatchSystem& batch);

/// The shell text that starts options.processes workers on each of the job's nodes,
/// connecting to `scheduler`, named JOBNAME-$JOBID-I (the batch system's job_id_variable
/// holds the job's id; I counts the job's workers from 0, node by node), each with cores /
/// processes threads, `worker_memory` bytes (0: its default), --connect-timeout
/// death_timeout and the lifetime flags of worker_lifetime(). On one node, one worker is
/// exec'ed, so the batch system's signals reach its nanny directly; several are started in
/// the background, and a SIGTERM to the script is passed on to them. On several nodes the
/// script execs the batch system's on_each_node launcher (srun), which runs that same text
/// on each node. Throws std::invalid_argument for several nodes where the batch system has
/// no such launcher.
std::string worker_command(const JobClusterOptions& options, const std::string& scheduler,
                           const BatchSystem& batch, std::uint64_t worker_memory);

/// Each worker's --lifetime, --lifetime-stagger and --lifetime-grace as the options say or
/// the walltime gives (JobClusterOptions::worker_lifetime); lifetime 0: none.
struct WorkerLifetime {
  std::chrono::seconds lifetime{0}, stagger{0}, grace{0};
};
/// Throws std::invalid_argument when an explicit lifetime leaves no time before the walltime.
WorkerLifetime worker_lifetime(const JobClusterOptions& options);

/// The job for `command`, asking for options.cores, `job_memory` bytes and the rest.
JobSpec job_spec(const JobClusterOptions& options, std::string command,
                 std::uint64_t job_memory);

}  // namespace taskwire::launch
