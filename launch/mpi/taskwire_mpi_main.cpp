// taskwire-mpi: a whole cluster in one MPI launch, for clients outside the job.
//   mpiexec.mpich -n N taskwire-mpi --preload lib.so --scheduler-file F
// Rank 0 runs the scheduler, ranks 1..N-1 workers; workers talk to the scheduler and to each
// other over MPI, and the scheduler also listens on TCP (its address goes first in the
// scheduler file) so that a Client outside the job can connect and submit work. The job ends
// when a client calls shutdown() or on SIGINT/SIGTERM, every rank exiting 0.
#include <taskwire/launch/mpi/launch.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>
#include <taskwire/comm/mpi/rank_watcher.hpp>
#include <taskwire/http/http_server.hpp>
#include <taskwire/launch/daemon_bootstrap.hpp>
#include <taskwire/runtime/launch_env.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <csignal>

namespace po = boost::program_options;
using namespace taskwire;

namespace {

constexpr const char* kProgram = "taskwire-mpi";

struct MainOptions {
  mpi::LaunchOptions launch;
  std::string transport = "mpi";
  std::string connect_timeout = "30s";
  launch::TlsFileOptions tls;
  std::string dashboard_address = ":8787";
  bool no_dashboard = false;
  bool no_rank_watcher = false;
  std::string resources;
};

po::options_description describe(MainOptions& o) {
  auto& options = o.launch;
  po::options_description desc(
      "taskwire-mpi: a taskwire cluster in one MPI launch. Rank 0 runs the scheduler, every\n"
      "other rank a worker; they talk over MPI. The scheduler also listens on TCP for clients\n"
      "outside the job (Client::from_scheduler_file). Ends on client.shutdown() or SIGTERM.\n\n"
      "usage: mpiexec.mpich -n N taskwire-mpi --preload lib.so --scheduler-file F [options]\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "preload", po::value(&options.preload)->composing(),
      "shared library whose TASKWIRE_REGISTER'ed functions the workers can run; repeatable")(
      "scheduler-file", po::value(&options.scheduler_file),
      "write the scheduler's addresses (TCP door first) to this JSON file")(
      "listen", po::value(&options.extra_scheduler_listen)->composing(),
      "the scheduler's door for clients, repeatable (default tcp://127.0.0.1:0; "
      "tcp://0.0.0.0:8786 for every interface)")(
      "nthreads", po::value(&options.nthreads)->default_value(options.nthreads),
      "threads running tasks on each worker rank")(
      "resources", po::value(&o.resources),
      "what each worker rank offers tasks, e.g. \"GPU=1\" (as taskwire-worker --resources)")(
      "transport", po::value(&o.transport)->default_value(o.transport),
      "how workers reach the scheduler and each other: mpi, tcp or tls")(
      "tcp-host", po::value(&options.tcp_host),
      "interface address for --transport tcp or tls (default 127.0.0.1 when every rank is "
      "on one host, else the address of each rank's host name)")(
      "connect-timeout", po::value(&o.connect_timeout)->default_value(o.connect_timeout),
      "how long workers try to reach the scheduler: 30, 30s, 500ms, 2m or 1h")(
      "log-level", po::value(&options.log_level)->default_value("info"),
      "trace, debug, info, warn, error, off")(
      "log-file", po::value(&options.log_file),
      "also log to this file, one per rank: {rank} is replaced (e.g. 'taskwire-{rank}.log')")(
      "dashboard-address", po::value(&o.dashboard_address)->default_value(o.dashboard_address),
      "where the scheduler rank serves its dashboard, /metrics and /json: :PORT (127.0.0.1 "
      "only), HOST:PORT, 0.0.0.0:PORT; a port in use falls back to a free one")(
      "no-dashboard", po::bool_switch(&o.no_dashboard), "serve no dashboard")(
      "no-rank-watcher", po::bool_switch(&o.no_rank_watcher),
      "under mpiexec.mpich, do not fork each rank into a watcher (the process Hydra started, "
      "which names the rank if it dies) and the rank's own process");
  launch::add_tls_options(desc, o.tls);
  return desc;
}

void check(MainOptions& o) {
  o.launch.transport = mpi::parse_transport(o.transport);
  if (o.launch.nthreads == 0) throw po::error("--nthreads must be at least 1");
  try {
    o.launch.worker_resources = runtime::parse_resources(o.resources, "--resources");
  } catch (const std::invalid_argument& e) {
    throw po::error(e.what());
  }
  const auto timeout = launch::parse_timeout(o.connect_timeout, "--connect-timeout");
  // Every rank starts together: a scheduler rank that is not up by then never will be.
  if (!timeout) throw po::error("--connect-timeout must be a duration here, not none");
  o.launch.connect_timeout = *timeout;
  auto tls = runtime::Config::from_env();  // the files every rank will use, checked once here
  launch::apply_tls_options(o.tls, tls);
  o.launch.tls_ca_file = tls.tls_ca_file;
  o.launch.tls_cert_file = tls.tls_cert_file;
  o.launch.tls_key_file = tls.tls_key_file;
  if (!o.no_dashboard) {
    try {
      http::parse_listen_address(o.dashboard_address);
    } catch (const std::invalid_argument& e) {
      throw po::error(std::string("--dashboard-address: ") + e.what());
    }
    o.launch.dashboard_address = o.dashboard_address;
  }
  if (o.launch.extra_scheduler_listen.empty())
    o.launch.extra_scheduler_listen.push_back("tcp://127.0.0.1:0");
}

int run(int argc, char* argv[], const MainOptions& o) {
  // run_cluster handles SIGINT/SIGTERM while the cluster serves. Before it and after it,
  // while MPI starts and shuts down, the rank is already on its way and a stop request
  // must not kill it mid-MPI (Hydra would then SIGKILL the whole job): they are ignored.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  // Before MPI and any thread (launch.hpp, LaunchOptions::rank_watcher): rank 0 serves the
  // scheduler, every other rank a worker.
  if (!o.no_rank_watcher)
    comm::mpi::start_rank_watcher(argc, argv,
                                  runtime::launch_position().rank == 0 ? "scheduler" : "worker");
  mpi::MpiEnvironment env(argc, argv);
  if (env.size() < 2) {
    if (env.rank() == 0)
      fmt::print(stderr,
                 "taskwire-mpi: needs at least 2 MPI ranks (a scheduler and a worker), got {}: "
                 "launch with `mpiexec.mpich -n N taskwire-mpi ...`, N >= 2\n",
                 env.size());
    return launch::kExitUsage;
  }
  // run_cluster sets up logging and loads the --preload libraries.
  const int rc = mpi::run_cluster(env, o.launch, mpi::Layout{0, -1}, {});
  if (env.rank() == 0) spdlog::info("taskwire-mpi: stopped");
  return rc;
}

}  // namespace

int main(int argc, char* argv[]) {
  MainOptions options;
  const auto desc = describe(options);
  if (auto rc = launch::parse_daemon_command_line(kProgram, argc, argv, desc, nullptr,
                                                   [&] { check(options); }))
    return *rc;
  return launch::run_daemon(kProgram, [&] { return run(argc, argv, options); });
}
