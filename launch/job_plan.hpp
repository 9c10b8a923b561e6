#pragma once
// What a job cluster submits, as pure functions of its options (tests check them without a
// batch system): the workers' command line and the job's JobSpec.
#include <taskwire/launch/batch_system.hpp>
#include <taskwire/launch/job_cluster.hpp>

#include <chrono>
#include <string>

namespace taskwire::launch {

/// The shell text that starts options.processes workers connecting to `scheduler`, named
/// JOBNAME-$JOBID-I (`job_id_variable` holds the job's id), each with cores / processes
/// threads, `worker_memory` bytes (0: its default), --connect-timeout death_timeout and the
/// lifetime flags of worker_lifetime(). One
/// worker is exec'ed, so the batch system's signals reach its nanny directly; several are
/// started in the background, and a SIGTERM to the script is passed on to them.
std::string worker_command(const JobClusterOptions& options, const std::string& scheduler,
                           const std::string& job_id_variable, std::uint64_t worker_memory);

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
