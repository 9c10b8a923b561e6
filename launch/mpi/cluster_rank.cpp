#include <taskwire/launch/mpi/cluster_rank.hpp>
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/address.hpp>
#include <taskwire/http/http_server.hpp>
#include <taskwire/runtime/asio.hpp>
#include <taskwire/comm/mpi/mpi_broadcast.hpp>
#include <taskwire/comm/mpi/rank_watcher.hpp>
#include <taskwire/runtime/process_info.hpp>
#include <taskwire/runtime/scheduler_file.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>
#include <taskwire/worker/crash_record.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace taskwire::mpi::detail {

using namespace std::chrono_literals;

namespace {

// How long a rank that ends the job waits for the launcher to forward its output first.
constexpr auto kOutputDrain = 250ms;

[[noreturn]] void park_until_exit() {
  for (;;) std::this_thread::sleep_for(1s);
}

bool is_loopback_host(const std::string& host) {
  error_code ec;
  const auto ip = asio::ip::make_address(host, ec);
  return ec ? host == "localhost" : ip.is_loopback();
}

// Where a worker of a job over mpi:// also serves its data, for clients that come in through
// the scheduler's doors (tcp://, tls://) from outside the job and cannot reach mpi://: the
// door's scheme on a free port, on loopback when the door is (a door for this host only),
// else on every interface, advertising the address the host name gives (see WorkerOptions).
std::vector<std::string> worker_doors(const LaunchOptions& options) {
  std::vector<std::string> doors;
  if (options.transport != Transport::mpi) return doors;  // the workers' own address serves
  for (const auto& door : options.extra_scheduler_listen) {
    const auto a = comm::Address::parse(door);
    if (a.scheme != "tcp" && a.scheme != "tls") continue;
    const auto host = comm::HostPort::parse(a.location).host;
    doors.push_back(a.scheme + "://" +
                    comm::HostPort{is_loopback_host(host) ? host : "0.0.0.0", 0}.str());
  }
  return doors;
}

}  // namespace

ClusterRank::ClusterRank(MpiEnvironment& env, LaunchOptions options, Layout layout,
                         JobSignals* signals)
    : env_(env), options_(std::move(options)), layout_(layout), signals_(signals) {
  const int n = env_.size();
  if (layout_.scheduler_rank < 0 || layout_.scheduler_rank >= n)
    throw std::invalid_argument(fmt::format(
        "taskwire::mpi: scheduler rank {} is not a rank of this {}-rank job", layout_.scheduler_rank, n));
  if (layout_.client_rank >= n)
    throw std::invalid_argument(fmt::format(
        "taskwire::mpi: client rank {} is not a rank of this {}-rank job", layout_.client_rank, n));
  if (worker_count() < 1)
    throw std::invalid_argument(fmt::format(
        "taskwire::mpi: a {}-rank job leaves no rank for a worker", n));
  if (options_.nthreads == 0) throw std::invalid_argument("taskwire::mpi: nthreads must be at least 1");

  auto config = runtime::Config::from_env();
  config.role = is_scheduler() ? "scheduler" : is_client() ? "client" : "worker";
  // A client's own waiting thread counts as runnable when it checks for a free core; a rank
  // that is also the scheduler (pool mode) is busy, and checks like any other.
  config.mpi.yield_unchecked = is_client() && !is_scheduler();
  config.name = fmt::format("rank-{}", env_.rank());
  if (!options_.tls_ca_file.empty()) config.tls_ca_file = options_.tls_ca_file;
  if (!options_.tls_cert_file.empty()) config.tls_cert_file = options_.tls_cert_file;
  if (!options_.tls_key_file.empty()) config.tls_key_file = options_.tls_key_file;
  context_ = std::make_unique<runtime::Context>(config, 1);
  // The program's waits run the loop; they linger only where the context serves nothing but
  // the program's client (not the scheduler too).
  if (is_client())
    context_->enable_driving(is_scheduler() ? std::chrono::microseconds(0) : config.client_drive_linger);
  registry_ = std::make_unique<comm::Registry>(*context_);
  comm::register_builtin_backends(*registry_);
  context_->start();
  if (signals_) signals_->set_handler([this](int signo) { on_signal(signo); });
  // The watchdog names a rank that dies before the launcher kills the job for it.
  env_.hold_launcher_links(true);
  watchdog_ = std::thread([this] { watch_peers(); });
}

ClusterRank::~ClusterRank() {
  if (signal_ends_) park_until_exit();  // reached by the program's thread while a signal ends it
  if (signals_) signals_->set_handler({});
  stop_watch_ = true;
  watchdog_.join();
  env_.hold_launcher_links(false);  // nobody here watches any more: the launcher does
  client_.reset();
  worker_.reset();
  scheduler_.reset();
  registry_.reset();
  if (keep_context_) {
    // The program's futures may outlive the cluster: the connection's comms go with the
    // last of them, and their strands need the io_context (stopped, never run again) until
    // then, so it is left for the process's end (one small io_context per cluster).
    // Kept reachable from a global, so that LeakSanitizer does not take the intentional
    // leak (a cycle of strands and comms once nothing else points at it) for a lost one.
    context_->stop();
    static auto* const kept = new std::vector<std::unique_ptr<runtime::Context>>();
    kept->push_back(std::move(context_));
    return;
  }
  context_.reset();
}

std::string role_name(Layout layout, int rank) {
  if (rank == layout.scheduler_rank && rank == layout.client_rank) return "program and scheduler";
  if (rank == layout.scheduler_rank) return "scheduler";
  if (rank == layout.client_rank) return "client";
  return "worker";
}

std::string ClusterRank::role_of(int rank) const { return role_name(layout_, rank); }

// A rank that dies leaves MPI unable to finish (MPI_Finalize would wait for it forever), and
// launchers do not always end the job themselves: end it here, naming the rank. A rank that
// leaves with a reason (its GOODBYE's) decides how: see on_farewell().
void ClusterRank::watch_peers() {
  std::vector<bool> heard(static_cast<std::size_t>(env_.size()), false);
  while (!stop_watch_) {
    env_.check_peers(/*now_please=*/true);
    env_.take_goodbyes();  // a cluster over TCP leaves them to this thread
    for (int r = 0; r < env_.size(); ++r) {
      if (r == env_.rank()) continue;
      if (env_.is_lost(r)) {
        // Its watcher, if it has one, names it first (with its cause, which this rank may not
        // know: the watcher reaped it), then ends as it did: this rank's line would repeat it.
        const bool named = env_.wait_for_watcher(r, MpiEnvironment::kWatcherLine);
        end_job(fmt::format("taskwire: rank {} ({} on host {}) died without shutting down: {}; "
                            "an MPI job cannot continue without it, so rank {} ends the job",
                            r, role_of(r), env_.host_of(r), env_.how_lost(r), env_.rank()),
                named ? JobEndLine::logged : JobEndLine::printed);
      }
      const auto why = env_.farewell_of(r);
      if (!why || why->orderly() || heard[static_cast<std::size_t>(r)]) continue;
      heard[static_cast<std::size_t>(r)] = true;
      on_farewell(r, *why);
    }
    env_.wait_for_peer_event(100ms);  // at once when a watched rank ends
  }
}

// A rank that left while the job runs: the program's rank ending (exit() or a return from
// main without a shutdown) ends the cluster as a shutdown would; a signal that only one rank
// got ends the job as if every rank had (the same exit status everywhere, as after a
// Ctrl-C); any other rank leaving leaves the cluster short of a part MPI cannot replace.
void ClusterRank::on_farewell(int rank, Farewell why) {
  using Kind = Farewell::Kind;
  const auto who =
      fmt::format("rank {} ({} on host {})", rank, role_of(rank), env_.host_of(rank));
  if (why.kind == Kind::signal && signals_) {
    if (signals_->received()) return;  // this rank got it too, or another: already ending
    spdlog::warn("rank {}: {} {}: ending the job as if this rank had too", env_.rank(), who,
                 why.str());
    signal_forwarded_ = true;
    signals_->forward(why.code);
    return;
  }
  if (why.kind == Kind::exit && rank == layout_.client_rank) {
    const auto line = fmt::format("rank {}: {} {} with its cluster still up: the cluster "
                                  "shuts down",
                                  env_.rank(), who, why.str());
    if (is_scheduler()) spdlog::warn("{}", line);
    else spdlog::info("{}", line);
    program_left_ = true;
    return;
  }
  end_job(fmt::format("taskwire: {} {} while the job ran; an MPI job cannot continue without "
                      "it, so rank {} ends the job",
                      who, why.str(), env_.rank()));
}

void ClusterRank::end_job(const std::string& why, JobEndLine line) {
  comm::mpi::note_rank_stage(comm::mpi::RankStage::ending_job);  // named here: not by its watcher
  if (line == JobEndLine::printed) {
    spdlog::critical("{}", why);
    fmt::print(stderr, "{}\n", why);
  } else {
    spdlog::info("{} (its watcher named it)", why);
  }
  spdlog::default_logger()->flush();
  std::fflush(stderr);
  // Hydra's proxy may take MPI_Abort before it has read what the ranks wrote (this line, the
  // dead rank's last words): it then tears the job down and they are lost (1 run in 6 of
  // exits_test.sh worker-quit). Nothing kills this rank meanwhile (the launcher links).
  std::this_thread::sleep_for(kOutputDrain);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort does not return; should it, this rank still must not go on
}

// Whether the program's rank left with the cluster up; looks for its GOODBYE itself, for a
// worker whose scheduler vanished before the watchdog had read it.
bool ClusterRank::program_left() {
  if (program_left_) return true;
  env_.take_goodbyes();
  const auto why = env_.farewell_of(layout_.client_rank);
  return why && why->kind == Farewell::Kind::exit;
}

int ClusterRank::worker_count() const noexcept {
  const bool separate_client = layout_.client_rank >= 0 && layout_.client_rank != layout_.scheduler_rank;
  return env_.size() - 1 - (separate_client ? 1 : 0);
}

std::string ClusterRank::listen_address() const {
  if (options_.transport == Transport::mpi) return fmt::format("mpi://{}", env_.rank());
  return fmt::format("{}://{}:0", to_string(options_.transport), options_.tcp_host);
}

void ClusterRank::start() {
  // Collective, and every rank has the same options: all of them take this branch or none.
  if (options_.transport != Transport::mpi && options_.tcp_host.empty())
    options_.tcp_host = default_tcp_host(env_);
  if (is_scheduler()) start_scheduler();
  scheduler_address_ = broadcast(env_, scheduler_address_, layout_.scheduler_rank);
  if (!is_scheduler() && !is_client()) {
    worker::WorkerOptions o;
    o.scheduler_address = scheduler_address_;
    o.name = fmt::format("rank-{}", env_.rank());
    o.nthreads = options_.nthreads;
    o.memory = options_.memory;
    o.resources = options_.worker_resources;
    o.listen_address = listen_address();
    o.extra_listen_addresses = worker_doors(options_);
    o.connect_timeout = options_.connect_timeout;
    if (!options_.dashboard_address.empty()) {
      // Each worker rank serves its own on a free port of the scheduler's dashboard interface.
      o.dashboard = true;
      o.dashboard_address = http::parse_listen_address(options_.dashboard_address).host + ":0";
    }
    worker_ = std::make_unique<worker::Worker>(*context_, *registry_, o);
    worker_->start();
    // No nanny under mpiexec: a rank that dies ends the job, and this says which task did it.
    worker::crash::install_fatal_signal_handlers(
        fmt::format("taskwire rank {} (worker {})", env_.rank(), worker_->name()));
    spdlog::info("rank {}: worker {} at {}", env_.rank(), worker_->name(), worker_->address());
    if (o.dashboard)
      spdlog::info("rank {}: worker dashboard at {}", env_.rank(), worker_->dashboard_url());
  }
  if (is_scheduler()) wait_for_workers();
  env_.barrier();  // every worker is known to the scheduler before the program starts
  if (is_client()) {
    const auto& at = inproc_address_.empty() ? scheduler_address_ : inproc_address_;
    ClientOptions client_options;
    client_options.connect_timeout = options_.connect_timeout;
    client_.emplace(*registry_, at, client_options);
    spdlog::info("rank {}: client connected to {}", env_.rank(), at);
  }
  started_ = true;
}

// On JobSignals' thread. Serving ranks only note it (serve() polls signal_received()); the
// client rank's program is blocked somewhere in its own code, so the cluster is ended here.
void ClusterRank::on_signal(int signo) {
  if (!signal_forwarded_)  // else the watchdog named the rank that got it
    spdlog::warn("rank {} ({}): {} received, ending the job", env_.rank(), role_of(env_.rank()),
                 runtime::describe_signal(signo));
  if (!is_client() || ending_.exchange(true)) return;  // not the client, or it is finishing
  signal_ends_ = true;
  end_client_rank_for_signal(signo);
}

void ClusterRank::end_client_rank_for_signal(int signo) {
  while (!started_) std::this_thread::sleep_for(10ms);  // bounded by the force exit
  try {
    if (client_) client_->shutdown();
  } catch (const std::exception& e) {
    spdlog::info("rank {}: cluster shutdown after {}: {}", env_.rank(), ::strsignal(signo), e.what());
  }
  if (scheduler_) {
    scheduler_->finished().wait_for(2s);
    scheduler_->stop();
  }
  exit_after_signal(env_, signo, true);
}

void exit_after_signal(MpiEnvironment& env, int signo, bool threads_still_run) {
  // A rank that got it alone tells the others so (ClusterRank::on_farewell).
  env.shutdown(Farewell::signalled(signo));
  spdlog::info("rank {}: ended by {}, exiting {}", env.rank(), ::strsignal(signo), 128 + signo);
  spdlog::default_logger()->flush();
  std::fflush(stdout);
  std::fflush(stderr);
  if (threads_still_run) std::_Exit(128 + signo);
  std::exit(128 + signo);
}

void ClusterRank::start_scheduler() {
  scheduler::SchedulerServerOptions o;
  o.listen = {listen_address()};
  for (const auto& a : options_.extra_scheduler_listen) o.listen.push_back(a);
  const bool embedded_client = layout_.client_rank == layout_.scheduler_rank;
  if (embedded_client) o.listen.push_back("inproc://auto");
  o.dashboard.enabled = !options_.dashboard_address.empty();
  o.dashboard.address = options_.dashboard_address;
  scheduler_ = std::make_unique<scheduler::SchedulerServer>(*registry_, o);
  scheduler_->start();
  if (o.dashboard.enabled)
    spdlog::info("rank {}: dashboard at {}", env_.rank(), scheduler_->dashboard_url());
  auto addresses = scheduler_->addresses();
  scheduler_address_ = addresses.front();
  if (embedded_client) inproc_address_ = addresses.back();
  spdlog::info("rank {}: scheduler at {}", env_.rank(), fmt::join(addresses, ", "));
  if (!options_.scheduler_file.empty()) {
    // The door for clients outside the job first: Client::from_scheduler_file prefers tcp.
    runtime::SchedulerFile file;
    for (std::size_t i = 1; i < addresses.size(); ++i)
      if (!embedded_client || i + 1 < addresses.size()) file.addresses.push_back(addresses[i]);
    file.addresses.push_back(scheduler_address_);
    file.write(options_.scheduler_file);
  }
}

void ClusterRank::wait_for_workers() {
  const auto expected = static_cast<std::size_t>(worker_count());
  const auto deadline = std::chrono::steady_clock::now() + options_.connect_timeout;
  std::size_t seen = 0;
  const auto finished = scheduler_->finished();
  while ((seen = scheduler_->inspect([](const scheduler::SchedulerState& s) {
            return s.workers().size();
          })) < expected) {
    // A client outside the job (taskwire-mpi's TCP door) may have come, worked and shut the
    // cluster down before the last worker registered: nothing to wait for any more.
    if (finished.wait_for(0s) == std::future_status::ready) return;
    if (std::chrono::steady_clock::now() > deadline) {
      spdlog::warn("rank {}: only {} of {} workers registered within {} ms; starting anyway",
                   env_.rank(), seen, expected, options_.connect_timeout.count());
      return;
    }
    std::this_thread::sleep_for(2ms);
  }
}

int ClusterRank::finish_client() {
  if (finished_) return 0;
  if (ending_.exchange(true)) park_until_exit();  // a signal is ending the process
  finished_ = true;
  int rc = 0;
  if (client_) {
    try {
      client_->shutdown();
    } catch (const std::exception& e) {
      spdlog::error("rank {}: cluster shutdown: {}", env_.rank(), e.what());
      rc = 1;
    }
    client_.reset();
    keep_context_ = true;  // the program may still hold futures (see the destructor)
  }
  if (scheduler_) {
    if (scheduler_->finished().wait_for(10s) != std::future_status::ready) rc = 1;
    scheduler_->stop();
  }
  return rc;
}

int ClusterRank::serve() {
  if (finished_) return 0;
  finished_ = true;
  return is_scheduler() ? serve_scheduler() : serve_worker();
}

int ClusterRank::serve_scheduler() {
  auto finished = scheduler_->finished();
  while (finished.wait_for(50ms) != std::future_status::ready)
    if (signal_received() || program_left_) break;  // on_signal, on_farewell logged it
  scheduler_->stop();
  return 0;
}

// Whether the scheduler's rank has left (its GOODBYE): a worker that never reached it (a
// client outside the job came, worked and shut the cluster down before this rank connected)
// would otherwise wait for it until its connect timeout.
bool ClusterRank::scheduler_left() {
  env_.take_goodbyes();
  return env_.said_goodbye(layout_.scheduler_rank);
}

int ClusterRank::serve_worker() {
  bool stop_requested = false;
  while (!worker_->wait_closed(50ms)) {
    if (!stop_requested && (signal_received() || program_left_ || scheduler_left())) {
      worker_->request_stop();
      stop_requested = true;
    }
  }
  worker_->stop();
  const auto status = worker_->close_status();
  if (!status.clean && program_left()) {
    spdlog::info("rank {}: worker stopped after the program left ({})", env_.rank(),
                 status.reason);
    return 0;
  }
  if (!status.clean) {
    spdlog::error("rank {}: worker ended: {}", env_.rank(), status.reason);
    return 1;
  }
  spdlog::info("rank {}: worker stopped ({})", env_.rank(), status.reason);
  return 0;
}

}  // namespace taskwire::mpi::detail
