#pragma once
// Launching a whole cluster with one `mpiexec.mpich -n N`, after dask_mpi.initialize.
//
//   int main(int argc, char** argv) {
//     auto session = taskwire::mpi::initialize(argc, argv);  // ranks 0 and 2.. never return
//     taskwire::Client& client = session.client();           // rank 1 runs the program
//     ...
//   }  // end of the program: the cluster shuts down and every rank exits 0
//
// Roles: rank 0 runs the scheduler, rank 1 the client (the program), ranks 2..N-1 workers.
// initialize_pool() is the static manager-worker pool for batch jobs (as mpi4py.futures):
// rank 0 runs the program with the scheduler embedded in its process, ranks 1..N-1 workers.
// run_cluster() is the collective building block under both: it returns on every rank when
// the cluster is shut down, so one launch can run several clusters (MPI, then TCP) in turn.
//
// Transport: workers and the client reach the scheduler, and workers each other, over
// mpi:// (default), tcp:// or tls:// under the same launch, so the two compare on the same work.
// Failures: a rank that dies ends the whole job with a non-zero exit and a message naming the
// rank (MpiEnvironment); a task that throws is a TaskError at its future, not fatal.
//
// Programs include <taskwire/mpi.hpp>, which brings this header and MpiEnvironment's
// definition. This one names MpiEnvironment only by reference, so it does not pull <mpi.h>.
#include <taskwire/runtime/resources.hpp>
#include <taskwire/worker/memory_limits.hpp>
#include <taskwire/client/client.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::comm::mpi {
class MpiEnvironment;  // comm/mpi/mpi_environment.hpp
}  // namespace taskwire::comm::mpi

namespace taskwire::mpi {

using comm::mpi::MpiEnvironment;

enum class Transport { mpi, tcp, tls };

/// "mpi", "tcp" or "tls"; throws std::invalid_argument naming the accepted values.
Transport parse_transport(std::string_view name);
std::string_view to_string(Transport t) noexcept;

struct LaunchOptions {
  /// How workers and clients reach the scheduler and each other.
  Transport transport = Transport::mpi;
  /// Threads running tasks on each worker rank.
  unsigned nthreads = 1;
  /// Log level of every rank (trace, debug, info, warn, error, off). Empty: initialize() and
  /// initialize_pool() log at warn; run_cluster() leaves logging as it finds it (a program
  /// that set up its own keeps it).
  std::string log_level;
  /// One log file per rank when set: "{rank}" is replaced, e.g. "taskwire-{rank}.log".
  std::string log_file;
  /// Host (interface address) the TCP transport listens on and advertises. Empty: 127.0.0.1
  /// when every rank runs on one host, else the address the rank's host name resolves to
  /// (default_tcp_host()); set it when that is not the address other nodes reach.
  std::string tcp_host;
  /// TLS files (runtime::Config's tls_ca_file, tls_cert_file, tls_key_file) for every rank;
  /// empty: TASKWIRE_TLS_CA_FILE, TASKWIRE_TLS_CERT, TASKWIRE_TLS_KEY's. Transport::tls needs
  /// a certificate and key (each rank listens), and with a CA file is mutual TLS.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  /// Extra addresses the scheduler also listens on (taskwire-mpi's TCP door for clients
  /// outside the job, e.g. tcp://0.0.0.0:8786).
  std::vector<std::string> extra_scheduler_listen;
  /// When set, the scheduler rank writes its contact addresses there (the TCP door first).
  std::string scheduler_file;
  /// Where the scheduler rank serves its HTTP dashboard (/, /metrics, /json/..., /health), as
  /// taskwire-scheduler's --dashboard-address (":8787" is 127.0.0.1:8787). Empty: none, the
  /// default for programs (taskwire-mpi serves one unless --no-dashboard). When set, each
  /// worker rank serves its own on a free port of the same interface (its log says where).
  std::string dashboard_address;
  /// Libraries loaded on every rank before it starts (their TASKWIRE_REGISTERed functions).
  std::vector<std::string> preload;
  /// How long workers and the client try to reach the scheduler.
  std::chrono::milliseconds connect_timeout{30'000};
  /// Every rank catches SIGINT/SIGTERM while the cluster runs (initialize/initialize_pool:
  /// until the session ends; see job_signals.hpp): the cluster shuts down, MPI finalises and
  /// every rank ends its process with 128 + signo, the program's rank included (its thread is
  /// not unwound). A job without a program (Layout::client_rank -1) returns 0 from
  /// run_cluster instead. False: the signals' dispositions are left alone.
  bool handle_signals = true;
  /// initialize/initialize_pool under mpiexec.mpich (Hydra): each rank forks before MPI
  /// starts, and the process Hydra started becomes a small watcher of the rank's process
  /// (comm/mpi/rank_watcher.hpp), so that a rank that dies is named every time, before
  /// Hydra knows of it. `ps` shows two processes per rank: the watcher ("taskwire-watch:
  /// rank 2, pid N (worker)") and the program. False: no fork (the other ranks name a dead
  /// rank when they can). run_cluster() never forks: its caller started MPI.
  bool rank_watcher = true;
  /// Each worker rank's memory limit and thresholds (worker::MemoryOptions; see
  /// docs/scheduling.md, "Memory"). Default: no limit. A worker rank past `terminate` closes
  /// (ranks have no nanny).
  worker::MemoryOptions memory;
  /// What each worker rank offers tasks (worker::WorkerOptions::resources, e.g.
  /// {{"GPU", 1}}): every worker rank gets the same.
  runtime::Resources worker_resources;
};

/// Which rank does what. `client_rank` may equal `scheduler_rank` (pool mode: the scheduler
/// runs inside the program's process) or be -1 (no client in the job: taskwire-mpi).
struct Layout {
  int scheduler_rank = 0;
  int client_rank = 1;
};

/// The client side of a launched cluster: owned by the rank that runs the program.
/// Destroying it (or shutdown()) stops the scheduler and every worker.
class Session {
 public:
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();  ///< shutdown(); never throws

  Client& client();
  int rank() const noexcept;
  int size() const noexcept;
  int workers() const noexcept;  ///< worker ranks in the job
  Transport transport() const noexcept;
  const std::string& scheduler_address() const noexcept;

  /// Stops the cluster (client.shutdown(): the scheduler and every worker exit 0), then,
  /// when this session owns MPI (initialize, initialize_pool), finalises it. Idempotent.
  void shutdown();

  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

/// dask_mpi.initialize: initialises MPI, then rank 0 serves as the scheduler and ranks 2..N-1
/// as workers until the client shuts the cluster down, and exit the process with the
/// cluster's status (0 after a clean shutdown); they never return. Rank 1 returns a Session.
/// Throws std::runtime_error (on every rank, before any role starts) with fewer than 3 ranks.
Session initialize(int& argc, char**& argv, LaunchOptions options = {});

/// Static manager-worker pool: rank 0 returns a Session whose scheduler runs in its own
/// process; ranks 1..N-1 are workers and never return. Throws std::runtime_error with fewer
/// than 2 ranks.
Session initialize_pool(int& argc, char**& argv, LaunchOptions options = {});

/// Collective: every rank of `env` calls it with the same options and layout. It sets up
/// logging when options.log_level or log_file is set, and loads options.preload (a library
/// that cannot be loaded throws std::runtime_error, on every rank, before any role starts).
/// The client rank runs `program` with a connected Client; when it returns, the cluster
/// shuts down.
/// Every rank returns the cluster's status for it: 0 after a clean shutdown, else non-zero
/// (a worker that lost its scheduler, ...). Exceptions from `program` propagate on its rank
/// after the cluster is shut down. MPI stays initialised.
int run_cluster(MpiEnvironment& env, const LaunchOptions& options, Layout layout,
                const std::function<void(Client&)>& program);

}  // namespace taskwire::mpi
