#pragma once
// Slurm behind launch::BatchSystem: job scripts with #SBATCH directives, submitted with
// `sbatch --parsable` (the script on stdin), cancelled with `scancel`, followed with `squeue`.
// The commands are Slurm's own, found on PATH; SLURM_CONF and the rest of the environment
// pass to them unchanged (and sbatch passes it on to the job, as --export=ALL does).
#include <taskwire/launch/batch_system.hpp>

#include <chrono>
#include <string>

namespace taskwire::launch {

struct SlurmCommands {
  std::string sbatch = "sbatch";
  std::string scancel = "scancel";
  std::string squeue = "squeue";
  /// Longest one command may take before it is killed and the call fails (a slurmctld that
  /// does not answer makes sbatch retry for a long time).
  std::chrono::milliseconds timeout{30'000};
};

class SlurmBatch final : public BatchSystem {
 public:
  explicit SlurmBatch(SlurmCommands commands = {});

  std::string name() const override { return "slurm"; }
  std::string job_id_variable() const override { return "SLURM_JOB_ID"; }
  /// srun, one task per node; a worker that exits does not end the others.
  std::vector<std::string> on_each_node(unsigned nodes) const override;
  std::string node_index_variable() const override { return "SLURM_NODEID"; }
  std::string job_script(const JobSpec& job) const override;
  std::string submit(const std::string& script) override;
  void cancel(const std::vector<std::string>& ids) override;
  std::map<std::string, JobState> states(const std::vector<std::string>& ids) override;

 private:
  SlurmCommands commands_;
};

/// Slurm's time format for `walltime`: "MM:SS" under an hour, "HH:MM:SS", "D-HH:MM:SS".
std::string slurm_time(std::chrono::seconds walltime);

/// The state squeue's %T names ("PENDING", "RUNNING", "COMPLETING", ...): a job that is
/// ending counts as finished, as its workers are leaving.
JobState slurm_job_state(const std::string& name);

}  // namespace taskwire::launch
