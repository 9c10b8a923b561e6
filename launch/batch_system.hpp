#pragma once
// taskwire::launch::BatchSystem: what a job cluster (launch/job_cluster.hpp) needs of a batch
// system, after dask-jobqueue's Job classes: write a job script, submit it, cancel jobs and
// ask which are still queued or running. One implementation per batch system, each in a
// folder of its own with the same shape (launch/slurm/); only Slurm is implemented, because
// only Slurm is tested (tests/slurm/).
#include <chrono>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace taskwire::launch {

/// A batch command failed (not found, refused, timed out); the message has its command line
/// and what it printed.
class BatchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class JobState {
  pending,   ///< queued, or being set up
  running,
  finished,  ///< ended in any way, or no longer known to the batch system
};

/// One job, in terms every batch system has.
struct JobSpec {
  std::string name = "taskwire-worker";  ///< the job's name in the queue
  unsigned nodes = 1;                    ///< nodes the job asks for; the two below are per node
  unsigned cores = 1;                    ///< CPUs the job asks for on each node
  std::uint64_t memory_bytes = 0;        ///< memory per node; 0: the batch system's default
  std::chrono::seconds walltime{1800};   ///< its time limit; 0: the partition's default
  std::string queue = {};          ///< Slurm's partition, PBS's and LSF's queue; "": default
  std::string account = {};        ///< charged account; "": the user's default
  std::string log_directory = {};  ///< where its output goes; "": the submit directory
  /// More directives, as written after the batch system's prefix (Slurm: "--gres=gpu:1" is
  /// written "#SBATCH --gres=gpu:1").
  std::vector<std::string> extra_directives = {};
  /// Shell lines run before the command (`module load ...`, `source venv/bin/activate`).
  std::vector<std::string> prologue = {};
  std::string command = {};  ///< the shell text that runs the workers
};

/// Not thread-safe: the job cluster calls it under its own lock. Every call that runs a batch
/// command blocks until it ends (bounded by the implementation's timeout).
class BatchSystem {
 public:
  BatchSystem() = default;
  virtual ~BatchSystem() = default;
  BatchSystem(const BatchSystem&) = delete;
  BatchSystem& operator=(const BatchSystem&) = delete;

  /// "slurm", for messages.
  virtual std::string name() const = 0;
  /// The command prefix a batch script runs a command with once on each of its job's
  /// `nodes` nodes ("srun --nodes=N ..."), and the variable holding the node's index (0 to
  /// nodes - 1) in each; empty: this batch system runs jobs of one node only.
  virtual std::vector<std::string> on_each_node(unsigned /*nodes*/) const { return {}; }
  virtual std::string node_index_variable() const { return {}; }
  /// The variable holding the job's id inside a job ("SLURM_JOB_ID"): workers take their
  /// names from it, so the cluster knows which job a worker belongs to.
  virtual std::string job_id_variable() const = 0;
  /// The script submit() would be given for `job`. No I/O.
  virtual std::string job_script(const JobSpec& job) const = 0;
  /// Submits `script`; returns the job's id. Throws BatchError.
  virtual std::string submit(const std::string& script) = 0;
  /// Cancels the jobs (their processes get SIGTERM, then SIGKILL); jobs already gone are no
  /// error. Throws BatchError when the command itself fails.
  virtual void cancel(const std::vector<std::string>& ids) = 0;
  /// The state of each of `ids` (each present in the answer). Throws BatchError.
  virtual std::map<std::string, JobState> states(const std::vector<std::string>& ids) = 0;
};

}  // namespace taskwire::launch
