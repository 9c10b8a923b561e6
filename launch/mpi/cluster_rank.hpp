#pragma once
// One rank's part in a cluster launched under mpiexec (see launch.hpp): the scheduler, a
// worker, the client, or (pool mode) the scheduler and the client in one process.
// start() and the end of a cluster are collective: every rank of the job takes part.
#include <taskwire/launch/mpi/job_signals.hpp>
#include <taskwire/launch/mpi/launch.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/runtime/context.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace taskwire::scheduler {
class SchedulerServer;
}
namespace taskwire::worker {
class Worker;
}

namespace taskwire::mpi::detail {

/// How long a rank may take to end after SIGINT/SIGTERM before it exits anyway, with the
/// same status (the job was ended by the signal either way).
inline constexpr double kSignalGraceSeconds = 5.0;

class ClusterRank {
 public:
  /// Throws std::invalid_argument for a layout that does not fit the job. `signals` (may be
  /// null: signals not handled) outlives the rank; the rank handles them while it exists.
  ClusterRank(MpiEnvironment& env, LaunchOptions options, Layout layout,
              JobSignals* signals);
  ~ClusterRank();  ///< stops whatever still runs here
  ClusterRank(const ClusterRank&) = delete;
  ClusterRank& operator=(const ClusterRank&) = delete;

  /// Collective. The scheduler rank starts listening and tells every rank its address;
  /// workers start and register; once the scheduler has seen them all (or the connect
  /// timeout passed), the client rank connects.
  void start();

  bool is_client() const noexcept { return env_.rank() == layout_.client_rank; }
  Client& client() { return *client_; }
  const std::string& scheduler_address() const noexcept { return scheduler_address_; }
  int worker_count() const noexcept;

  /// Client rank: shuts the cluster down (scheduler and workers exit their roles), waits for
  /// an embedded scheduler, stops everything here. Returns 0. Idempotent.
  int finish_client();
  /// Other ranks: serve until the client shuts the cluster down (or SIGINT/SIGTERM), then
  /// stop. Returns 0 after a clean shutdown, 1 otherwise.
  int serve();
  /// The SIGINT/SIGTERM that ended (or is ending) this rank's part, or 0. On the client rank
  /// a signal never returns here: JobSignals' thread shuts the cluster down, finalises MPI
  /// and ends the process with 128 + signo (the program's own thread cannot be unwound).
  int signal_received() const noexcept { return signals_ ? signals_->received() : 0; }

 private:
  bool is_scheduler() const noexcept { return env_.rank() == layout_.scheduler_rank; }
  std::string listen_address() const;
  void start_scheduler();
  void wait_for_workers();
  int serve_scheduler();
  int serve_worker();
  void watch_peers();
  void on_farewell(int rank, Farewell why);
  /// `why` goes to stderr (and the log, critical), or only to the log (info) when another
  /// process already printed what it says.
  enum class JobEndLine { printed, logged };
  [[noreturn]] void end_job(const std::string& why, JobEndLine line = JobEndLine::printed);
  bool program_left();
  bool scheduler_left();
  void on_signal(int signo);
  [[noreturn]] void end_client_rank_for_signal(int signo);
  std::string role_of(int rank) const;

  MpiEnvironment& env_;
  LaunchOptions options_;
  Layout layout_;
  std::unique_ptr<runtime::Context> context_;
  std::unique_ptr<comm::Registry> registry_;
  std::unique_ptr<scheduler::SchedulerServer> scheduler_;
  std::unique_ptr<worker::Worker> worker_;
  std::optional<Client> client_;
  std::string scheduler_address_;  // on the launch's transport
  std::string inproc_address_;     // pool mode: where the embedded client connects
  bool finished_ = false;
  bool keep_context_ = false;  // the program's futures outlive the cluster (see the destructor)
  std::atomic<bool> started_{false};  // start() is done: client_ and the roles exist
  // Client rank: whoever sets it first ends the cluster, finish_client() or a signal.
  std::atomic<bool> ending_{false};
  std::atomic<bool> signal_ends_{false};  // a signal won: the process ends on its thread
  JobSignals* signals_;                   // null: signals not handled
  std::atomic<bool> stop_watch_{false};
  // The program's rank left (exit() or a return from main) with the cluster up: this rank's
  // part ends as if the program had shut the cluster down.
  std::atomic<bool> program_left_{false};
  std::atomic<bool> signal_forwarded_{false};  // the watcher passed on another rank's signal
  std::thread watchdog_;  // ends the job when a rank dies or leaves (MPI cannot go on without it)
};

/// What `rank` does in `layout`: "scheduler", "client", "worker", "program and scheduler".
std::string role_name(Layout layout, int rank);

/// Ends a rank whose job was ended by `signo` (SIGINT/SIGTERM): MPI's orderly shutdown
/// (collective: every other rank does it too), logs flushed, then the process ends with
/// 128 + signo: std::exit when the rank's parts are all stopped, else std::_Exit (no
/// destructor may run under a thread that still uses them).
[[noreturn]] void exit_after_signal(MpiEnvironment& env, int signo, bool threads_still_run);

}  // namespace taskwire::mpi::detail
