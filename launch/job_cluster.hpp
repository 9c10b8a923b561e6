#pragma once
// taskwire::launch::JobCluster: workers as batch jobs, after dask-jobqueue's JobQueueCluster.
// It runs a scheduler in this process and submits jobs whose script starts taskwire-worker
// processes that connect to it; scale() and adapt() decide how many jobs there are, and every
// job it started is cancelled when it ends. The batch system is a launch::BatchSystem
// (launch/slurm/slurm_cluster.hpp: taskwire::SlurmCluster).
//
//   taskwire::SlurmCluster cluster({.cores = 4, .memory = "16GiB", .walltime = 1h,
//                                   .worker_extra_args = {"--preload", "./libmytasks.so"}});
//   cluster.scale(8);                  // workers (jobs: 8 / (nodes x processes), rounded up)
//   taskwire::Client client{cluster};  // or Client{cluster.scheduler_address()}
//   cluster.adapt({.minimum = 0, .maximum = 32});
//
// Workers leave by themselves when the scheduler is gone: at once when their connection to
// it closes, and after `death_timeout` when it never answered (a job that started after this
// process died), so no job outlives the cluster for long even when it is killed.
// Thread-safety: every member may be called from any thread.
#include <taskwire/client/scheduler_info.hpp>
#include <taskwire/launch/adaptive.hpp>
#include <taskwire/launch/batch_system.hpp>
#include <taskwire/runtime/config.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace taskwire::launch {

/// Designated-initializer friendly; the names are dask-jobqueue's where it has one.
struct JobClusterOptions {
  unsigned cores = 1;        ///< CPUs per job (per node), shared by its workers' threads
  std::string memory = {};  ///< memory per job (per node: "16GiB", "4GB", bytes); "": none
  unsigned processes = 1;   ///< workers per job (per node), each with cores / processes threads
  /// Nodes per job: one job holds nodes x processes workers, started on each of its nodes by
  /// Slurm's srun; cores, memory and processes are each node's.
  unsigned nodes = 1;
  std::chrono::seconds walltime{1800};  ///< each job's time limit; 0: the queue's default
  std::string queue = {};    ///< Slurm's partition (#SBATCH -p); "": the default one
  std::string account = {};  ///< #SBATCH -A; "": the user's default
  std::vector<std::string> job_extra_directives = {};  ///< e.g. "--gres=gpu:1", "--exclusive"
  std::vector<std::string> job_script_prologue = {};   ///< shell lines before the workers start
  std::string log_directory = {};  ///< where each job's output goes; "": the submit directory
  std::string job_name = "taskwire-worker";  ///< the jobs' name and the workers' name prefix
  /// The worker program as the job finds it: on the compute nodes' PATH, or a full path.
  std::string worker_executable = "taskwire-worker";
  /// More flags for each worker, e.g. {"--preload", "/path/libtasks.so"}.
  std::vector<std::string> worker_extra_args = {};
  /// A worker that cannot reach the scheduler this long, at start or after losing it, exits
  /// (its --connect-timeout and --death-timeout).
  std::chrono::seconds death_timeout{60};
  /// Each worker's --lifetime (soft, job_plan.hpp's worker_lifetime): that long after it
  /// started, a worker asks the scheduler to retire it: it hands back the tasks it has not
  /// started, finishes the running ones, its data is copied to other workers, then it exits
  /// and its job ends before the walltime kills it mid-task; the cluster submits a job in its
  /// place as soon as the retirement starts. -1 (the default): from the walltime: 5 minutes
  /// before it when it is over 10 minutes, else at 80 % of it (none without a walltime);
  /// 0: none.
  std::chrono::seconds worker_lifetime{-1};
  /// A random amount between -this and +this added to each worker's lifetime, so that the
  /// workers of jobs started together do not leave together. -1: from the walltime (2
  /// minutes over 10 minutes, else 5 % of it), or a twentieth of an explicit lifetime.
  std::chrono::seconds worker_lifetime_stagger{-1};
  /// How long a retiring worker waits for the scheduler to close it before it exits by itself
  /// (what it held alone is then recomputed). -1: from the walltime (2 minutes over 10
  /// minutes, else 10 % of it), half the time an explicit lifetime leaves before it (at most
  /// 2 minutes), or 60 s without a walltime.
  std::chrono::seconds worker_lifetime_grace{-1};
  /// How often the batch system is asked which jobs are still there (squeue), to replace
  /// the ones that ended; its controller is shared by every user, so not often (the
  /// scheduler, this process's own, is asked every 500 ms).
  std::chrono::milliseconds status_interval{5000};
  /// Where this process's scheduler listens; a wildcard listens on every interface.
  std::string listen = "tcp://0.0.0.0:0";
  /// The address the workers are told; "": `interface`'s, else what the host name resolves to
  /// (127.0.0.1, with a warning, when that is only loopback).
  std::string host = {};
  std::string interface = {};  ///< e.g. "ib0": advertise that interface's address
  /// The settings of the scheduler and of the cluster's own client in this process (auth
  /// token, TLS files, ...). The jobs do not see it: they get this process's environment
  /// (sbatch passes it on), so a token belongs in TASKWIRE_AUTH_TOKEN there.
  runtime::Config config = runtime::Config::from_env();
};

struct JobStatus {
  std::string id = {};
  JobState state = JobState::pending;
  std::size_t workers = 0;  ///< of its workers, those connected to the scheduler now
  /// Its workers retire (their lifetime ended): a job was submitted in its place.
  bool leaving = false;
  /// scale() or adapt() asked for fewer jobs: its workers retire (their tasks and data go
  /// to the other workers), then it is cancelled.
  bool draining = false;
};

class JobCluster {
 public:
  /// Starts the scheduler (no job yet). Throws std::invalid_argument for bad options,
  /// comm::CommError when the scheduler cannot listen.
  JobCluster(std::unique_ptr<BatchSystem> batch, JobClusterOptions options);
  /// close().
  ~JobCluster();
  JobCluster(const JobCluster&) = delete;
  JobCluster& operator=(const JobCluster&) = delete;

  /// Where clients and workers reach the scheduler, e.g. "tcp://10.0.0.5:41234".
  std::string scheduler_address() const;
  /// The script each job runs (what scale() submits).
  std::string job_script() const;

  /// Holds `workers` workers: jobs = workers / (nodes x processes), rounded up. Submits at once; of
  /// jobs too many, cancels those still queued at once, and retires the workers of the others
  /// first (idle ones and those holding the fewest bytes go first; their tasks not started
  /// and their data move to the workers that stay, as Client::retire_workers does), then
  /// cancels them once their workers left (or when a worker's lifetime grace, 60 s without
  /// one, has passed; or once the scheduler found nowhere to copy their data). Zero workers
  /// (here or through adapt()) cancels every job at once, without retiring anything: there
  /// is nowhere to keep data, so what the workers held is lost, as after Dask's scale(0)
  /// (a result still needed is computed again, scattered data is gone). Then it keeps the
  /// count:
  /// a job that ends by itself (walltime, node failure) is replaced, unless jobs keep
  /// ending before any worker of theirs connected (three in a row: logged, not replaced);
  /// a job whose workers retire (worker_lifetime) is replaced as soon as they start to.
  /// Stops adapt(). Throws BatchError when the batch system refuses, std::logic_error once
  /// shut_down().
  void scale(std::size_t workers);
  /// The same in jobs.
  void scale_jobs(std::size_t jobs);
  /// From now on the scheduler's load decides the number of workers (launch/adaptive.hpp),
  /// checked every options.interval, until scale() or close().
  void adapt(AdaptOptions options = {});

  /// Waits until at least `n` workers are connected; false after `timeout`.
  bool wait_for_workers(std::size_t n, std::chrono::milliseconds timeout);
  /// The jobs started and not known to have ended, as of the last check.
  std::vector<JobStatus> jobs() const;
  /// Jobs submitted since the start (to see that adapting does not thrash).
  std::size_t submitted_jobs() const;
  /// Checks of the scheduler and the jobs done so far (one a tick: 500 ms, or the adaptive
  /// interval): what came of one can be seen once the count has moved past it.
  std::size_t status_checks() const;
  /// True once a client's shutdown() stopped the scheduler (its workers close, their jobs
  /// end and none is submitted again; scale() then throws std::logic_error), or close().
  bool shut_down() const;
  /// Cancels every job this cluster started and stops the scheduler. Idempotent.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taskwire::launch
