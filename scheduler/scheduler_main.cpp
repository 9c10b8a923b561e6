// taskwire-scheduler: the scheduler daemon.
//   taskwire-scheduler --listen tcp://0.0.0.0:8786 [--listen ADDR2 ...] --scheduler-file F
// Exits 0 after SIGINT/SIGTERM or a client's shutdown(), 1 with a message on a fatal error,
// 2 on a bad command line (launch/daemon_bootstrap.hpp).
#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/host_address.hpp>
#include <taskwire/http/http_server.hpp>
#include <taskwire/launch/daemon_bootstrap.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/runtime/scheduler_file.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <future>

namespace po = boost::program_options;
using namespace taskwire;

namespace {

constexpr const char* kProgram = "taskwire-scheduler";

struct MainOptions {
  std::vector<std::string> listen;
  std::string scheduler_file, host, interface;
  launch::DaemonCommonOptions common;
  double heartbeat_timeout = 10, saturation = 1.1;
  int allowed_failures = scheduler::SchedulerOptions{}.allowed_failures;
  double no_workers_timeout = 0;
  std::string dashboard_address = scheduler::DashboardOptions{}.address;
  bool no_dashboard = false;
  bool no_work_stealing = false;
};

po::options_description describe(MainOptions& o) {
  po::options_description desc(
      "taskwire-scheduler: the taskwire scheduler daemon. Workers and clients connect to it;\n"
      "it places tasks on workers and tells clients when results are ready.\n\n"
      "usage: taskwire-scheduler [--listen ADDR ...] [--scheduler-file F] [options]\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "listen", po::value(&o.listen)->composing(),
      "address to listen on, repeatable (default tcp://HOST:8786 with HOST as --host says, "
      "else tcp://127.0.0.1:8786; tcp://0.0.0.0:PORT for every interface, port 0 for any "
      "free port)")(
      "host", po::value(&o.host),
      "the address (or a name the others resolve) workers and clients are told to reach this "
      "scheduler at, in its output and --scheduler-file, and listened on unless --listen says "
      "otherwise")(
      "interface", po::value(&o.interface),
      "as --host, with the address of this network interface (e.g. eth0, ib0)")(
      "scheduler-file", po::value(&o.scheduler_file),
      "write the contact addresses to this JSON file for workers and clients")(
      "heartbeat-timeout", po::value(&o.heartbeat_timeout)->default_value(o.heartbeat_timeout),
      "seconds without a heartbeat before a worker is removed")(
      "worker-saturation", po::value(&o.saturation)->default_value(o.saturation),
      "root tasks in flight per worker thread")(
      "allowed-failures", po::value(&o.allowed_failures)->default_value(o.allowed_failures),
      "a task errs once this many workers died while running it")(
      "no-work-stealing", po::bool_switch(&o.no_work_stealing),
      "never move a task, once placed, from a busy worker to an idle one")(
      "no-workers-timeout", po::value(&o.no_workers_timeout)->default_value(o.no_workers_timeout),
      "seconds without any worker after which the tasks waiting for one err (0: wait)")(
      "dashboard-address", po::value(&o.dashboard_address)->default_value(o.dashboard_address),
      "where the dashboard, /metrics and /json are served: :PORT (127.0.0.1 only), "
      "HOST:PORT, 0.0.0.0:PORT (every interface); a port in use falls back to a free one")(
      "no-dashboard", po::bool_switch(&o.no_dashboard), "serve no dashboard (no HTTP at all)");
  launch::add_daemon_common_options(desc, o.common,
                                     "also log to this file ({rank} and {pid} are replaced)");
  return desc;
}

void check(const MainOptions& o) {
  if (!o.host.empty() && !o.interface.empty())
    throw po::error("give --host or --interface, not both");
  if (o.allowed_failures < 1) throw po::error("--allowed-failures must be at least 1");
  if (!(o.no_workers_timeout >= 0)) throw po::error("--no-workers-timeout must not be negative");
  try {
    http::parse_listen_address(o.dashboard_address);
  } catch (const std::invalid_argument& e) {
    throw po::error(std::string("--dashboard-address: ") + e.what());
  }
}

bool advertises_host(const std::string& address) {
  const auto scheme = comm::Address::parse(address).scheme;
  return scheme == "tcp" || scheme == "tls";
}

std::string host_of(const std::string& address) {
  return comm::HostPort::parse(comm::Address::parse(address).location).host;
}

// What workers and clients are told, per listener: its contact address, with the host of
// --host / --interface on tcp:// and tls://. A listener bound to every interface whose host
// name gave only loopback is reachable from this machine only: said once, with the remedy.
std::vector<std::string> advertised(const MainOptions& o, const std::string& host,
                                    const std::vector<std::string>& contacts) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < contacts.size(); ++i) {
    const auto& contact = contacts[i];
    if (!advertises_host(contact)) {
      out.push_back(contact);
      continue;
    }
    out.push_back(host.empty() ? contact : comm::with_host(contact, host));
    const bool wildcard = i < o.listen.size() && comm::is_wildcard_host(host_of(o.listen[i]));
    if (host.empty() && wildcard && host_of(contact).rfind("127.", 0) == 0)
      spdlog::warn("scheduler: {} listens on every interface, but this machine's host name "
                   "resolves only to loopback: workers and clients on other hosts cannot use "
                   "{}; give --host or --interface",
                   o.listen[i], contact);
  }
  return out;
}

int run_scheduler(MainOptions& o) {
  runtime::init_logging({o.common.log_level, o.common.log_file, -1});
  const std::string host = o.interface.empty() ? o.host : comm::interface_address(o.interface);
  if (o.listen.empty())
    o.listen.push_back("tcp://" + comm::HostPort{host.empty() ? "127.0.0.1" : host, 8786}.str());
  launch::DaemonRuntime rt(launch::daemon_config("scheduler", "scheduler", o.common));

  scheduler::SchedulerServerOptions options;
  options.listen = o.listen;
  options.heartbeat_timeout =
      std::chrono::milliseconds(static_cast<long>(o.heartbeat_timeout * 1000));
  options.state.worker_saturation = o.saturation;
  options.state.allowed_failures = o.allowed_failures;
  options.state.work_stealing = !o.no_work_stealing;
  options.state.no_workers_timeout = o.no_workers_timeout;
  options.dashboard.enabled = !o.no_dashboard;
  options.dashboard.address = o.dashboard_address;
  scheduler::SchedulerServer server(rt.registry(), options);
  server.start();
  const auto addresses = advertised(o, host, server.addresses());
  for (const auto& a : addresses) fmt::print("taskwire-scheduler listening at {}\n", a);
  if (!o.no_dashboard) fmt::print("taskwire-scheduler dashboard at {}\n", server.dashboard_url());
  std::fflush(stdout);
  if (!o.scheduler_file.empty())
    runtime::SchedulerFile{addresses, o.no_dashboard ? "" : server.dashboard_url()}.write(
        o.scheduler_file);

  launch::StopSignals stops(rt.context());
  auto finished = server.finished();
  while (finished.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    // server.stop() waits for the context's one thread: it runs here, not in a signal action.
    if (const int signo = stops.wait_for(std::chrono::milliseconds(100))) {
      spdlog::info("scheduler: signal {} received, shutting down", signo);
      server.stop();
      finished.wait_for(std::chrono::seconds(10));
      break;
    }
  }
  spdlog::info("scheduler: stopped");
  return launch::kExitClean;
}

}  // namespace

int main(int argc, char* argv[]) {
  MainOptions options;
  const auto desc = describe(options);
  if (auto rc = launch::parse_daemon_command_line(kProgram, argc, argv, desc, nullptr,
                                                   [&] { check(options); }))
    return *rc;
  return launch::run_daemon(kProgram, [&] { return run_scheduler(options); });
}
