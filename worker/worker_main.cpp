// taskwire-worker: the worker daemon.
//   taskwire-worker SCHEDULER_ADDR --nthreads N --preload lib.so [--preload ...] [--name NAME]
// Exits 0 after a clean shutdown (close_worker from the scheduler, SIGINT, SIGTERM), non-zero
// with a message on any fatal error (the scheduler unreachable or lost, a bad option, a
// library that cannot be loaded).
#include <taskwire/comm/backends.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/runtime/preload.hpp>
#include <taskwire/runtime/scheduler_file.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <boost/program_options.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace po = boost::program_options;
using namespace taskwire;


int main(int argc, char* argv[]) {
  std::string scheduler, scheduler_file, name, listen, level = "info", log_file, token;
  std::vector<std::string> libraries;
  unsigned nthreads = 1;
  long heartbeat_ms = 500, connect_timeout_ms = 0;
  double inline_task_us = 20;
  po::options_description desc(
      "taskwire-worker: a taskwire worker daemon. It connects to the scheduler, runs the tasks\n"
      "it is given on a thread pool and serves its results to other workers and clients.\n\n"
      "usage: taskwire-worker SCHEDULER_ADDR [options]\n"
      "       taskwire-worker --scheduler-file F [options]\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "scheduler", po::value(&scheduler),
      "the scheduler's address, e.g. tcp://10.0.0.5:8786 (also the first positional argument)")(
      "scheduler-file", po::value(&scheduler_file),
      "read the scheduler's address from this file (written by taskwire-scheduler)")(
      "nthreads", po::value(&nthreads)->default_value(nthreads), "threads running tasks")(
      "inline-task-us", po::value(&inline_task_us)->default_value(inline_task_us),
      "a function whose runs average at most this many microseconds runs on the event loop "
      "instead of a pool thread (saves two thread hand-overs per task); 0: always the pool")(
      "preload", po::value(&libraries)->composing(),
      "shared library whose TASKWIRE_REGISTER'ed functions this worker can run; repeatable")(
      "name", po::value(&name), "this worker's name (default: its contact address)")(
      "listen", po::value(&listen),
      "where peers fetch data from this worker (default: tcp://HOST:0 on the interface that "
      "reaches the scheduler, or inproc://auto)")(
      "heartbeat-ms", po::value(&heartbeat_ms)->default_value(heartbeat_ms),
      "milliseconds between heartbeats to the scheduler")(
      "connect-timeout-ms", po::value(&connect_timeout_ms)->default_value(connect_timeout_ms),
      "give up connecting to the scheduler after this long (0: TASKWIRE_CONNECT_TIMEOUT_MS or "
      "10 s)")(
      "auth-token", po::value(&token), "token to present to peers (or TASKWIRE_AUTH_TOKEN)")(
      "log-level", po::value(&level)->default_value(level),
      "trace, debug, info, warn, error, critical, off")(
      "log-file", po::value(&log_file), "also log to this file ({rank} and {pid} are replaced)");
  po::positional_options_description positional;
  positional.add("scheduler", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(desc).positional(positional).run(), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    po::notify(vm);
    if (scheduler.empty() && scheduler_file.empty())
      throw po::error("no scheduler address: give SCHEDULER_ADDR or --scheduler-file");
    if (!scheduler.empty() && !scheduler_file.empty())
      throw po::error("give SCHEDULER_ADDR or --scheduler-file, not both");
    if (nthreads == 0) throw po::error("--nthreads must be at least 1");
    if (!(inline_task_us >= 0)) throw po::error("--inline-task-us must not be negative");
    if (heartbeat_ms <= 0) throw po::error("--heartbeat-ms must be positive");
    if (connect_timeout_ms < 0) throw po::error("--connect-timeout-ms must not be negative");
  } catch (const po::error& e) {
    fmt::print(stderr, "taskwire-worker: {}\nTry 'taskwire-worker --help'.\n", e.what());
    return 2;
  }

  try {
    runtime::init_logging({level, log_file, -1});
    for (const auto& lib : libraries) runtime::preload_library(lib);
    if (!scheduler_file.empty())
      scheduler = runtime::SchedulerFile::read(scheduler_file).address_for("tcp");

    auto config = runtime::Config::from_env();
    config.role = "worker";
    if (!name.empty()) config.name = name;
    if (!token.empty()) config.auth_token = token;
    runtime::Context ctx(config, 1);
    comm::Registry registry(ctx);
    comm::register_builtin_backends(registry);
    ctx.start();

    worker::WorkerOptions options;
    options.scheduler_address = scheduler;
    options.name = name;
    options.nthreads = nthreads;
    options.inline_task_seconds = inline_task_us * 1e-6;
    options.listen_address = listen;
    options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
    options.connect_timeout = std::chrono::milliseconds(connect_timeout_ms);
    worker::Worker worker(ctx, registry, options);

    asio::signal_set signals(ctx.io(), SIGINT, SIGTERM);
    signals.async_wait([&worker](error_code ec, int sig) {
      if (ec) return;
      spdlog::info("worker: signal {} received, shutting down", sig);
      worker.request_stop();
    });
    worker.start();
    fmt::print("taskwire-worker {} at {} (scheduler {})\n", worker.name(), worker.address(),
               scheduler);
    std::fflush(stdout);

    worker.wait_closed();
    worker.stop();
    signals.cancel();
    const auto status = worker.close_status();
    if (!status.clean) {
      fmt::print(stderr, "taskwire-worker: {}\n", status.reason);
      return 1;
    }
    spdlog::info("worker: stopped ({})", status.reason);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "taskwire-worker: {}\n", e.what());
    return 1;
  }
}
