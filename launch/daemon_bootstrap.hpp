#pragma once
// What taskwire-scheduler, taskwire-worker, taskwire-mpi and taskwire-jobqueue share: the
// command line's common options and its errors, logging, the configuration, a started context
// and registry, SIGINT/SIGTERM as a stop request, finding the scheduler, exit statuses. Built
// into the programs only (the taskwire_daemon_bootstrap static library), not libtaskwire, and
// not installed: it is not public API.
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/runtime/asio.hpp>
#include <taskwire/runtime/config.hpp>
#include <taskwire/runtime/context.hpp>

#include <boost/program_options.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace taskwire::launch {

/// Exit statuses of the three daemons.
inline constexpr int kExitClean = 0;    ///< a clean shutdown, SIGINT/SIGTERM included
inline constexpr int kExitFailure = 1;  ///< a fatal error, printed on stderr once
inline constexpr int kExitUsage = 2;    ///< a bad command line

/// --tls-ca-file, --tls-cert, --tls-key: each empty means TASKWIRE_TLS_CA_FILE's,
/// TASKWIRE_TLS_CERT's, TASKWIRE_TLS_KEY's (Config's tls_* fields).
struct TlsFileOptions {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

/// Options every daemon takes.
struct DaemonCommonOptions {
  std::string log_level = "info";
  std::string log_file;
  std::string auth_token;  ///< empty: TASKWIRE_AUTH_TOKEN's, if set
  TlsFileOptions tls;
};

/// Adds --tls-ca-file, --tls-cert and --tls-key to `desc` (as dask-scheduler's).
void add_tls_options(boost::program_options::options_description& desc, TlsFileOptions& tls);

/// Overlays the files given onto `config`, then checks that each file `config` names can be
/// read: throws std::invalid_argument naming the flag, the file and the system's reason, so
/// that a typo fails at start-up rather than at the first tls:// connection.
void apply_tls_options(const TlsFileOptions& tls, runtime::Config& config);

/// Adds --auth-token, --log-level, --log-file and the TLS options to `desc`; `log_file_help`
/// says how this daemon's processes share the file.
void add_daemon_common_options(boost::program_options::options_description& desc,
                               DaemonCommonOptions& common, const std::string& log_file_help);

/// Parses argv into `desc`'s variables and runs `check` (which throws
/// boost::program_options::error or std::invalid_argument for a bad value). Returns nullopt
/// to go on, or the exit status: kExitClean after printing --help, kExitUsage after printing
/// "PROGRAM: what was wrong" and a pointer to --help.
std::optional<int> parse_daemon_command_line(
    const char* program, int argc, char* argv[],
    const boost::program_options::options_description& desc,
    const boost::program_options::positional_options_description* positional = nullptr,
    const std::function<void()>& check = {});

/// Runs `body` and returns its exit status; an exception escaping it is printed once, as
/// "PROGRAM: what", and gives kExitFailure.
int run_daemon(const char* program, const std::function<int()>& body);

/// Config::from_env() with this daemon's role, and its name, auth token and TLS files where
/// given (apply_tls_options: throws std::invalid_argument for an unreadable file).
runtime::Config daemon_config(const std::string& role, const std::string& name,
                     const DaemonCommonOptions& common);

/// A context with one io thread and a registry holding the built-in backends, started.
class DaemonRuntime {
 public:
  explicit DaemonRuntime(runtime::Config config);
  runtime::Context& context() noexcept { return context_; }
  comm::Registry& registry() noexcept { return registry_; }

 private:
  runtime::Context context_;
  comm::Registry registry_;
};

/// SIGINT and SIGTERM, taken on the context's io thread, as a request to stop. Thread-safe.
class StopSignals {
 public:
  explicit StopSignals(runtime::Context& context);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// `action(signo)` runs at the first signal, on the io thread; at once, on this thread, if
  /// one came already. Replaces the previous action.
  void on_stop(std::function<void(int)> action);
  /// The first signal received; 0 while none came.
  int received() const;
  /// Blocks until a signal came or `timeout` passed; returns received().
  int wait_for(std::chrono::milliseconds timeout) const;

 private:
  struct State {
    mutable std::mutex mu;
    mutable std::condition_variable cv;
    int signo = 0;
    std::function<void(int)> action;
  };
  std::shared_ptr<State> state_;
  std::unique_ptr<asio::signal_set> signals_;
};

/// --connect-timeout's value: "none" (no limit), or a positive number of seconds with an
/// optional unit, "30", "30s", "500ms", "2m", "1h". Throws std::invalid_argument naming `flag`.
std::optional<std::chrono::milliseconds> parse_timeout(const std::string& text,
                                                       const std::string& flag);

/// Where a daemon finds its scheduler, and how long it waits for it.
struct SchedulerWait {
  std::string address;                               ///< this, or:
  std::string scheduler_file;                        ///< read once it exists
  std::optional<std::chrono::milliseconds> timeout;  ///< nullopt: wait for ever
  std::string timeout_text = "none";                 ///< as given, for messages
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  /// What is left of the timeout, for the connect (comm::kNoTimeout without one).
  std::chrono::milliseconds left() const;
  /// What to add to a failed connect's message: "; start the scheduler first, ..." when
  /// waiting longer could have helped.
  std::string advice(const error_code& ec) const;
};

/// The scheduler's address: `where.address`, or the tcp one (else the first) in the scheduler
/// file once it exists (SchedulerFile::wait_and_read: logged, until the timeout, which
/// throws std::runtime_error). nullopt if a stop signal came first. The address itself is
/// waited for by the connect (Worker::start with a connect timeout of where.left()).
std::optional<std::string> find_scheduler(const SchedulerWait& where, StopSignals& stops);

}  // namespace taskwire::launch
