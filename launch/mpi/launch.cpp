#include <taskwire/launch/mpi/cluster_rank.hpp>
#include <taskwire/launch/mpi/launch.hpp>
#include <taskwire/comm/mpi/rank_watcher.hpp>
#include <taskwire/runtime/force_exit.hpp>
#include <taskwire/runtime/launch_env.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/launch/preload.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

namespace taskwire::mpi {

namespace {
/// initialize()'s and initialize_pool()'s log level when LaunchOptions::log_level is empty.
constexpr std::string_view kDefaultLogLevel = "warn";
}  // namespace

Transport parse_transport(std::string_view name) {
  if (name == "mpi") return Transport::mpi;
  if (name == "tcp") return Transport::tcp;
  if (name == "tls") return Transport::tls;
  throw std::invalid_argument(fmt::format("unknown transport '{}': use mpi, tcp or tls", name));
}

std::string_view to_string(Transport t) noexcept {
  switch (t) {
    case Transport::mpi: return "mpi";
    case Transport::tcp: return "tcp";
    case Transport::tls: return "tls";
  }
  return "?";
}

struct Session::Impl {
  std::unique_ptr<detail::JobSignals> signals;   // until MPI is shut down (options.handle_signals)
  std::unique_ptr<MpiEnvironment> env;  // owned by initialize()/initialize_pool()
  std::unique_ptr<detail::ClusterRank> rank;
  Transport transport;
  int rank_id = 0, size = 1, workers = 0;
  std::string scheduler_address;

  void shutdown();
};

namespace {

// The session whose cluster is up, on the program's rank: a program that calls exit() (or
// returns from main with the session still alive, leaked or global) shuts it down at exit,
// as its destructor would have; else every other rank would wait for it forever.
std::mutex g_live_mu;
Session::Impl* g_live = nullptr;

void set_live(Session::Impl* impl, Session::Impl* expected) {
  std::lock_guard lock(g_live_mu);
  if (g_live == expected) g_live = impl;
}

// Registered after the environment's own exit handler, so it runs first: the cluster ends
// before MPI does. Bounded like a signal's end: the thread that called exit() may be one the
// shutdown needs (a callback's), and then the process ends with the program's status anyway.
void shut_live_session_down_at_exit(int status, void*) {
  Session::Impl* impl;
  {
    std::lock_guard lock(g_live_mu);
    impl = std::exchange(g_live, nullptr);
  }
  if (!impl) return;
  spdlog::warn("rank {}: the program exited (status {}) with its cluster still up: shutting the "
               "cluster down",
               impl->rank_id, status);
  runtime::force_exit_after(detail::kSignalGraceSeconds, "shutting the cluster down at exit",
                            status);
  try {
    impl->shutdown();
  } catch (const std::exception& e) {
    spdlog::error("rank {}: cluster shutdown at exit: {}", impl->rank_id, e.what());
  }
  runtime::force_exit_after(0, "");
}

}  // namespace

void Session::Impl::shutdown() {
  set_live(nullptr, this);
  if (!rank) return;
  rank->finish_client();
  rank.reset();
  if (env) env->shutdown();
  // A signal that came while the cluster was ending still ends the program, as on every rank.
  if (signals && signals->received())
    detail::exit_after_signal(*env, signals->received(), true);
  signals.reset();
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&& other) noexcept {
  if (this != &other) {
    shutdown();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Session::~Session() {
  try {
    shutdown();
  } catch (const std::exception& e) {
    spdlog::error("taskwire::mpi::Session: shutdown failed: {}", e.what());
  }
}

Client& Session::client() {
  if (!impl_ || !impl_->rank) throw std::logic_error("taskwire::mpi::Session: shut down already");
  return impl_->rank->client();
}
int Session::rank() const noexcept { return impl_ ? impl_->rank_id : -1; }
int Session::size() const noexcept { return impl_ ? impl_->size : 0; }
int Session::workers() const noexcept { return impl_ ? impl_->workers : 0; }
Transport Session::transport() const noexcept { return impl_ ? impl_->transport : Transport::mpi; }
const std::string& Session::scheduler_address() const noexcept {
  static const std::string none;
  return impl_ ? impl_->scheduler_address : none;
}

void Session::shutdown() {
  if (impl_) impl_->shutdown();
}

namespace {

// Common to initialize() and initialize_pool(): MPI, logging, preloads, then the roles. The
// ranks without the program serve and exit the process; the program's rank gets a Session.
Session launch(int& argc, char**& argv, const LaunchOptions& options, Layout layout,
               int min_ranks, const char* who) {
  // Before MPI and before any thread: from here on this process may be the watcher's child.
  std::optional<comm::mpi::RankWatcherStart> watcher;
  if (options.rank_watcher)
    watcher = comm::mpi::start_rank_watcher(
        argc, argv, detail::role_name(layout, runtime::launch_position().rank));
  auto env = std::make_unique<MpiEnvironment>(argc, argv);
  // After the environment's handler (it registered one when it started): this one runs first.
  static const bool at_exit = (::on_exit(shut_live_session_down_at_exit, nullptr), true);
  (void)at_exit;
  std::unique_ptr<detail::JobSignals> signals;
  if (options.handle_signals)
    signals = std::make_unique<detail::JobSignals>(detail::kSignalGraceSeconds);
  if (env->size() < min_ranks)
    throw std::runtime_error(fmt::format(
        "{} needs at least {} MPI ranks (got {}): launch with `mpiexec.mpich -n N PROGRAM`, "
        "N >= {}",
        who, min_ranks, env->size(), min_ranks));
  const auto level = options.log_level.empty() ? std::string(kDefaultLogLevel) : options.log_level;
  runtime::init_logging({level, options.log_file, env->rank()});
  if (watcher)
    spdlog::debug("rank {}: rank watcher: {}", env->rank(), comm::mpi::to_string(*watcher));
  for (const auto& lib : options.preload) launch::preload_library(lib);

  auto rank = std::make_unique<detail::ClusterRank>(*env, options, layout, signals.get());
  rank->start();
  if (!rank->is_client()) {
    const int rc = rank->serve();
    rank.reset();
    // `signals` stays up through MPI's shutdown: a signal landing after this rank's role has
    // ended would otherwise kill it by default in the middle of the collective end.
    if (signals && signals->received()) detail::exit_after_signal(*env, signals->received(), false);
    env->shutdown();
    std::exit(rc);
  }
  auto impl = std::make_unique<Session::Impl>();
  impl->transport = options.transport;
  impl->rank_id = env->rank();
  impl->size = env->size();
  impl->workers = rank->worker_count();
  impl->scheduler_address = rank->scheduler_address();
  impl->rank = std::move(rank);
  impl->env = std::move(env);
  impl->signals = std::move(signals);
  set_live(impl.get(), nullptr);
  return Session(std::move(impl));
}

}  // namespace

Session initialize(int& argc, char**& argv, LaunchOptions options) {
  return launch(argc, argv, options, Layout{0, 1}, 3, "taskwire::mpi::initialize");
}

Session initialize_pool(int& argc, char**& argv, LaunchOptions options) {
  return launch(argc, argv, options, Layout{0, 0}, 2, "taskwire::mpi::initialize_pool");
}

int run_cluster(MpiEnvironment& env, const LaunchOptions& options, Layout layout,
                const std::function<void(Client&)>& program) {
  if (!options.log_level.empty() || !options.log_file.empty()) {
    const auto level = options.log_level.empty()
                           ? std::string(spdlog::level::to_string_view(spdlog::get_level()).data())
                           : options.log_level;
    runtime::init_logging({level, options.log_file, env.rank()});
  }
  for (const auto& lib : options.preload) launch::preload_library(lib);
  std::unique_ptr<detail::JobSignals> signals;
  if (options.handle_signals)
    signals = std::make_unique<detail::JobSignals>(detail::kSignalGraceSeconds);
  auto rank = std::make_unique<detail::ClusterRank>(env, options, layout, signals.get());
  // A signal during the cluster ends the program's process (its thread cannot be unwound),
  // so every rank of a job with a program ends too; a job without one (taskwire-mpi)
  // returns, as a daemon stopped by SIGTERM.
  auto end_if_signalled = [&](bool threads_still_run) {
    if (signals && signals->received() && layout.client_rank >= 0)
      detail::exit_after_signal(env, signals->received(), threads_still_run);
  };
  rank->start();
  if (!rank->is_client()) {
    const int rc = rank->serve();
    rank.reset();
    end_if_signalled(false);
    return rc;
  }
  try {
    program(rank->client());
  } catch (...) {
    rank->finish_client();
    end_if_signalled(true);
    throw;
  }
  const int rc = rank->finish_client();
  rank.reset();
  end_if_signalled(true);
  return rc;
}

}  // namespace taskwire::mpi
