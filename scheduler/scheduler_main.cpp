// taskwire-scheduler: the scheduler daemon.
//   taskwire-scheduler --listen tcp://0.0.0.0:8786 [--listen ADDR2 ...] --scheduler-file F
#include <taskwire/comm/backends.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/runtime/scheduler_file.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <future>
#include <iostream>
#include <memory>

namespace po = boost::program_options;
using namespace taskwire;

int main(int argc, char* argv[]) {
  std::vector<std::string> listen;
  std::string scheduler_file, level = "info", log_file, token;
  double heartbeat_timeout = 10, saturation = 1.1;
  int allowed_failures = scheduler::SchedulerOptions{}.allowed_failures;
  double no_workers_timeout = 0;
  po::options_description desc(
      "taskwire-scheduler: the taskwire scheduler daemon. Workers and clients connect to it;\n"
      "it places tasks on workers and tells clients when results are ready.\n\n"
      "usage: taskwire-scheduler [--listen ADDR ...] [--scheduler-file F] [options]\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "listen", po::value(&listen)->composing(),
      "address to listen on, repeatable (default tcp://127.0.0.1:8786; tcp://0.0.0.0:PORT for "
      "every interface, port 0 for any free port)")(
      "scheduler-file", po::value(&scheduler_file),
      "write the contact addresses to this JSON file for workers and clients")(
      "heartbeat-timeout", po::value(&heartbeat_timeout)->default_value(heartbeat_timeout),
      "seconds without a heartbeat before a worker is removed")(
      "worker-saturation", po::value(&saturation)->default_value(saturation),
      "root tasks in flight per worker thread")(
      "allowed-failures", po::value(&allowed_failures)->default_value(allowed_failures),
      "a task errs once this many workers died while running it")(
      "no-workers-timeout", po::value(&no_workers_timeout)->default_value(no_workers_timeout),
      "seconds without any worker after which the tasks waiting for one err (0: wait)")(
      "auth-token", po::value(&token), "require this token from every peer (or TASKWIRE_AUTH_TOKEN)")(
      "log-level", po::value(&level)->default_value(level), "trace, debug, info, warn, error, off")(
      "log-file", po::value(&log_file), "also log to this file ({rank} and {pid} are replaced)");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    po::notify(vm);
    if (allowed_failures < 1) throw po::error("--allowed-failures must be at least 1");
    if (!(no_workers_timeout >= 0)) throw po::error("--no-workers-timeout must not be negative");
    runtime::init_logging({level, log_file, -1});
    if (listen.empty()) listen.push_back("tcp://127.0.0.1:8786");

    auto config = runtime::Config::from_env();
    config.role = "scheduler";
    config.name = "scheduler";
    if (!token.empty()) config.auth_token = token;
    runtime::Context ctx(config, 1);
    comm::Registry registry(ctx);
    comm::register_builtin_backends(registry);
    ctx.start();

    scheduler::SchedulerServerOptions options;
    options.listen = listen;
    options.heartbeat_timeout = std::chrono::milliseconds(static_cast<long>(heartbeat_timeout * 1000));
    options.state.worker_saturation = saturation;
    options.state.allowed_failures = allowed_failures;
    options.state.no_workers_timeout = no_workers_timeout;
    scheduler::SchedulerServer server(registry, options);
    server.start();
    for (const auto& a : server.addresses()) fmt::print("taskwire-scheduler listening at {}\n", a);
    std::fflush(stdout);
    if (!scheduler_file.empty()) runtime::SchedulerFile{server.addresses()}.write(scheduler_file);

    asio::signal_set signals(ctx.io(), SIGINT, SIGTERM);
    // Shared with the handler, which may run on a context thread after this scope is left
    // (a signal arriving as the server finishes).
    auto signalled = std::make_shared<std::promise<int>>();
    signals.async_wait([signalled](error_code ec, int sig) {
      if (!ec) signalled->set_value(sig);
    });
    auto finished = server.finished();
    auto sig = signalled->get_future();
    while (finished.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      if (sig.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        spdlog::info("scheduler: signal {} received, shutting down", sig.get());
        server.stop();
        finished.wait_for(std::chrono::seconds(10));
        break;
      }
    }
    signals.cancel();
    spdlog::info("scheduler: stopped");
    return 0;
  } catch (const po::error& e) {
    fmt::print(stderr, "taskwire-scheduler: {}\nTry 'taskwire-scheduler --help'.\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "taskwire-scheduler: {}\n", e.what());
    return 1;
  }
}
