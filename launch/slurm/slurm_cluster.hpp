#pragma once
// taskwire::SlurmCluster: taskwire workers as Slurm batch jobs, after dask-jobqueue's
// SLURMCluster. Everything but the batch system is launch::JobCluster's (job_cluster.hpp:
// scale, adapt, job_script, the scheduler in this process, cancelling every job at the end).
//
//   taskwire::SlurmCluster cluster({.cores = 8, .memory = "32GiB", .processes = 2,
//                                   .walltime = std::chrono::hours(2), .queue = "compute",
//                                   .account = "proj42",
//                                   .worker_extra_args = {"--preload", "/home/me/libtasks.so"}});
//   std::cout << cluster.job_script();   // what each sbatch gets
//   cluster.scale(8);                    // 4 jobs of 2 workers
//   taskwire::Client client{cluster};
//
// The job script asks for one task with `cores` CPUs (`#SBATCH -n 1 --cpus-per-task`) and
// `memory` (--mem), the walltime (-t), partition (-p), account (-A), each of
// job_extra_directives as an #SBATCH line, then runs the prologue and the workers. sbatch
// gives the job this process's environment (TASKWIRE_AUTH_TOKEN too, so set the token there,
// never in a flag that the script would show).
#include <taskwire/launch/job_cluster.hpp>
#include <taskwire/launch/slurm/slurm_batch.hpp>

#include <memory>

namespace taskwire {

using SlurmClusterOptions = launch::JobClusterOptions;
using launch::AdaptOptions;

class SlurmCluster : public launch::JobCluster {
 public:
  /// Starts the scheduler; no job is submitted until scale() or adapt().
  explicit SlurmCluster(SlurmClusterOptions options = {}, launch::SlurmCommands commands = {})
      : JobCluster(std::make_unique<launch::SlurmBatch>(std::move(commands)),
                   std::move(options)) {}
};

}  // namespace taskwire
