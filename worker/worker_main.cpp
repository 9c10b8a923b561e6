// taskwire-worker: the worker daemon.
//   taskwire-worker SCHEDULER_ADDR --nthreads N --preload lib.so [--preload ...] [--name NAME]
// It waits for its scheduler (the scheduler file to appear, then its address to answer) until
// --connect-timeout, by default for ever, as dask-worker does: start order does not matter.
// Exits 0 after a clean shutdown (close_worker from the scheduler, SIGINT, SIGTERM, also while
// waiting), 1 with a message on a fatal error (the scheduler not there in time, a peer that
// is not a scheduler, a library that cannot be loaded), 2 on a bad command line. A worker
// that loses its scheduler (or is dropped by it) waits for it and joins again, as at start.
// By default the process is a nanny (nanny.hpp) that runs the worker in a child process and
// restarts it when it dies of a signal; a child waiting for its scheduler is not dying.
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/http/http_server.hpp>
#include <taskwire/launch/daemon_bootstrap.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/launch/preload.hpp>
#include <taskwire/runtime/resources.hpp>
#include <taskwire/worker/crash_record.hpp>
#include <taskwire/worker/nanny.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace po = boost::program_options;
using namespace taskwire;
using namespace taskwire::worker;

namespace {

constexpr const char* kProgram = "taskwire-worker";

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// "0.7", not the double's 17 digits, in --help.
std::string fraction_text(double f) { return fmt::format("{:g}", f); }

struct MainOptions {
  std::string scheduler, scheduler_file, name, listen, host, interface;
  std::string connect_timeout = "none";
  std::string death_timeout = "60s";
  launch::DaemonCommonOptions common;
  std::vector<std::string> libraries;
  unsigned nthreads = 1;
  long heartbeat_ms = 500;
  long fetch_timeout_ms = worker::WorkerOptions{}.fetch_timeout.count();
  double inline_task_us = 20;
  bool no_nanny = false;
  int restart_limit = 10;
  std::string dashboard_address = worker::WorkerOptions{}.dashboard_address;
  bool no_dashboard = false;
  // The memory limit and the local directory are what a batch job's environment sets per
  // node (TASKWIRE_MEMORY_LIMIT, TASKWIRE_LOCAL_DIRECTORY); the rest are flags, Dask's defaults.
  std::string memory_limit = env_or("TASKWIRE_MEMORY_LIMIT", "auto");
  std::string local_directory = env_or("TASKWIRE_LOCAL_DIRECTORY", "");
  double memory_target = MemoryOptions{}.target;
  double memory_spill = MemoryOptions{}.spill;
  double memory_pause = MemoryOptions{}.pause;
  double memory_terminate = MemoryOptions{}.terminate;
  std::string resources;
  std::string lifetime = "none", lifetime_stagger = "0", lifetime_grace = "1m";
};

// The nanny draws its worker's retirement time once and hands it to every worker process it
// starts, so that a worker restarted after a crash keeps the job's deadline.
constexpr const char* kRetireAtEnv = "TASKWIRE_WORKER_RETIRE_AT";

po::options_description describe(MainOptions& o) {
  po::options_description desc(
      "taskwire-worker: a taskwire worker daemon. It connects to the scheduler, runs the tasks\n"
      "it is given on a thread pool and serves its results to other workers and clients.\n"
      "A nanny process runs it and restarts it when it dies (--no-nanny: no nanny).\n\n"
      "usage: taskwire-worker SCHEDULER_ADDR [options]\n"
      "       taskwire-worker --scheduler-file F [options]\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "scheduler", po::value(&o.scheduler),
      "the scheduler's address, e.g. tcp://10.0.0.5:8786 (also the first positional argument)")(
      "scheduler-file", po::value(&o.scheduler_file),
      "read the scheduler's address from this file (written by taskwire-scheduler)")(
      "nthreads", po::value(&o.nthreads)->default_value(o.nthreads), "threads running tasks")(
      "inline-task-us", po::value(&o.inline_task_us)->default_value(o.inline_task_us),
      "a function whose runs average at most this many microseconds runs on the event loop "
      "instead of a pool thread (saves two thread hand-overs per task); with --nthreads 1, "
      "any function averaging at most 1 ms does; 0: always the pool")(
      "preload", po::value(&o.libraries)->composing(),
      "shared library whose TASKWIRE_REGISTER'ed functions this worker can run; repeatable")(
      "name", po::value(&o.name), "this worker's name (default: its contact address)")(
      "resources", po::value(&o.resources),
      "what this worker offers tasks, as NAME=AMOUNT pairs, e.g. \"GPU=2,MEM=64e9\": a task "
      "submitted with resources runs only on a worker offering them, and only while enough "
      "is free there")(
      "listen", po::value(&o.listen),
      "where peers fetch data from this worker (default: tcp://HOST:0, HOST as --host says, "
      "or inproc://auto); tcp://0.0.0.0:PORT listens on every interface and advertises HOST")(
      "host", po::value(&o.host),
      "the address (or a name the others resolve) this worker advertises to the scheduler, "
      "its peers and clients, and listens on unless --listen says otherwise (default: the "
      "local address it reaches the scheduler from)")(
      "interface", po::value(&o.interface),
      "as --host, with the address of this network interface (e.g. eth0, ib0)")(
      "heartbeat-ms", po::value(&o.heartbeat_ms)->default_value(o.heartbeat_ms),
      "milliseconds between heartbeats to the scheduler")(
      "connect-timeout", po::value(&o.connect_timeout)->default_value(o.connect_timeout),
      "wait this long for the scheduler (its file to appear, then its address to answer) "
      "before giving up with exit status 1: 30, 30s, 500ms, 2m, 1h, or none for no limit")(
      "death-timeout", po::value(&o.death_timeout)->default_value(o.death_timeout),
      "after losing its scheduler (or being dropped by it), wait this long for it to answer "
      "again and join it, before giving up with exit status 1 (as --connect-timeout; none: "
      "for ever)")(
      "fetch-timeout-ms", po::value(&o.fetch_timeout_ms)->default_value(o.fetch_timeout_ms),
      "a fetch from a peer worker fails (the data is fetched elsewhere or recomputed) once "
      "nothing arrived from it for this long; 0: no deadline")(
      "no-nanny", po::bool_switch(&o.no_nanny),
      "run the worker in this process: no restart when it dies, and the scheduler learns "
      "only that its connection closed")(
      "restart-limit", po::value(&o.restart_limit)->default_value(o.restart_limit),
      "the nanny gives up (exit 1) when the worker died this many times within a minute")(
      "dashboard-address", po::value(&o.dashboard_address)->default_value(o.dashboard_address),
      "where this worker's dashboard, /metrics and /json are served: :PORT (127.0.0.1 only), "
      "HOST:PORT, 0.0.0.0:PORT (every interface); port 0: a free one, printed in the log")(
      "no-dashboard", po::bool_switch(&o.no_dashboard), "serve no dashboard (no HTTP at all)")(
      "memory-limit", po::value(&o.memory_limit)->default_value(o.memory_limit),
      "memory this worker's process may use: bytes (4e9, 4GB, 4GiB), a fraction of the "
      "machine's memory (0.5), auto (the machine's memory, or its cgroup's limit, times "
      "nthreads / cores), or none (also 0). Results past the target fraction of it spill to "
      "--local-directory (env TASKWIRE_MEMORY_LIMIT)")(
      "local-directory", po::value(&o.local_directory),
      "where spilled results go: a fresh directory inside it, removed at exit (default: "
      "$TMPDIR or /tmp; env TASKWIRE_LOCAL_DIRECTORY)")(
      "memory-target-fraction",
      po::value(&o.memory_target)->default_value(o.memory_target, fraction_text(o.memory_target)),
      "results held in memory past this fraction of --memory-limit spill, least recently used "
      "first; 0: off")(
      "memory-spill-fraction",
      po::value(&o.memory_spill)->default_value(o.memory_spill, fraction_text(o.memory_spill)),
      "process memory (RSS) past this fraction spills results until below the target; 0: off")(
      "memory-pause-fraction",
      po::value(&o.memory_pause)->default_value(o.memory_pause, fraction_text(o.memory_pause)),
      "process memory past this fraction pauses the worker: no new task, no fetch, until it "
      "falls; 0: off")(
      "memory-terminate-fraction",
      po::value(&o.memory_terminate)
          ->default_value(o.memory_terminate, fraction_text(o.memory_terminate)),
      "process memory past this fraction restarts the worker (its nanny does; with "
      "--no-nanny it exits 1); 0: off")(
      "lifetime", po::value(&o.lifetime)->default_value(o.lifetime),
      "after this long (30s, 50m, 2h; none: never) the worker asks the scheduler to retire "
      "it: it takes no new task, hands back those not started, finishes the running ones, "
      "its data is copied to other workers, then it exits 0 and its nanny with it. Set it "
      "below a batch job's walltime so that the job ends without losing work")(
      "lifetime-stagger", po::value(&o.lifetime_stagger)->default_value(o.lifetime_stagger),
      "a random amount between -this and +this added to --lifetime, so that workers started "
      "together do not all leave at once")(
      "lifetime-grace", po::value(&o.lifetime_grace)->default_value(o.lifetime_grace),
      "if the scheduler has not retired the worker this long after --lifetime (no other "
      "worker to take its data, a task that runs on), it exits by itself; what it held alone "
      "is then computed again. Keep --lifetime + --lifetime-stagger + this below the "
      "walltime");
  launch::add_daemon_common_options(
      desc, o.common,
      "also log to this file ({rank} and {pid} are replaced); the nanny and its worker share it");
  return desc;
}

worker::MemoryOptions memory_options(const MainOptions& o) {
  worker::MemoryOptions m;
  m.limit = worker::parse_memory_limit(o.memory_limit, o.nthreads, "--memory-limit");
  m.target = o.memory_target;
  m.spill = o.memory_spill;
  m.pause = o.memory_pause;
  m.terminate = o.memory_terminate;
  m.local_directory = o.local_directory;
  return m;
}

// A duration flag where 0 (or none) means nothing at all.
std::chrono::milliseconds duration_or_zero(const std::string& text, const std::string& flag) {
  if (text == "0" || text == "none") return std::chrono::milliseconds(0);
  return *launch::parse_timeout(text, flag);
}

void check(const MainOptions& o) {
  if (o.scheduler.empty() && o.scheduler_file.empty())
    throw po::error("no scheduler address: give SCHEDULER_ADDR or --scheduler-file");
  if (!o.scheduler.empty() && !o.scheduler_file.empty())
    throw po::error("give SCHEDULER_ADDR or --scheduler-file, not both");
  if (!o.host.empty() && !o.interface.empty())
    throw po::error("give --host or --interface, not both");
  if (o.nthreads == 0) throw po::error("--nthreads must be at least 1");
  if (!(o.inline_task_us >= 0)) throw po::error("--inline-task-us must not be negative");
  if (o.heartbeat_ms <= 0) throw po::error("--heartbeat-ms must be positive");
  launch::parse_timeout(o.connect_timeout, "--connect-timeout");
  launch::parse_timeout(o.death_timeout, "--death-timeout");
  if (o.fetch_timeout_ms < 0) throw po::error("--fetch-timeout-ms must not be negative");
  if (o.restart_limit < 0) throw po::error("--restart-limit must not be negative");
  launch::parse_timeout(o.lifetime, "--lifetime");
  duration_or_zero(o.lifetime_stagger, "--lifetime-stagger");
  if (!launch::parse_timeout(o.lifetime_grace, "--lifetime-grace"))
    throw po::error("--lifetime-grace takes a duration (30s, 5m), not none");
  try {
    runtime::parse_resources(o.resources, "--resources");
  } catch (const std::invalid_argument& e) {
    throw po::error(e.what());
  }
  try {
    worker::parse_memory_limit(o.memory_limit, o.nthreads, "--memory-limit");
    worker::check_memory_fractions(memory_options(o));
  } catch (const std::invalid_argument& e) {
    throw po::error(e.what());
  }
  try {
    http::parse_listen_address(o.dashboard_address);
  } catch (const std::invalid_argument& e) {
    throw po::error(std::string("--dashboard-address: ") + e.what());
  }
}

// `args` with their --connect-timeout (either form) replaced by `value`.
std::vector<std::string> with_connect_timeout(const std::vector<std::string>& args,
                                              const std::string& value) {
  const std::string flag = "--connect-timeout";
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag) {
      ++i;  // and its value
      continue;
    }
    if (args[i].rfind(flag + "=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  out.push_back(flag + "=" + value);
  return out;
}

// When this worker asks to be retired (--lifetime, +- --lifetime-stagger from now); the
// epoch: never.
std::chrono::system_clock::time_point draw_retire_at(const MainOptions& o) {
  const auto lifetime = launch::parse_timeout(o.lifetime, "--lifetime");
  if (!lifetime) return {};
  const auto stagger = duration_or_zero(o.lifetime_stagger, "--lifetime-stagger");
  std::uniform_int_distribution<std::int64_t> offset(-stagger.count(), stagger.count());
  std::random_device seed;
  std::mt19937_64 random(seed());
  return std::chrono::system_clock::now() + *lifetime + std::chrono::milliseconds(offset(random));
}

std::int64_t epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// A nanny's worker takes the time its nanny drew; one without a nanny draws its own.
std::chrono::system_clock::time_point retire_at(const MainOptions& o, bool nannied) {
  const char* drawn = std::getenv(kRetireAtEnv);
  if (nannied && drawn && *drawn)
    return std::chrono::system_clock::time_point(std::chrono::milliseconds(std::atoll(drawn)));
  return draw_retire_at(o);
}

int run_as_nanny(int argc, char* argv[], const MainOptions& o) {
  block_nanny_signals();  // before any thread starts: only the nanny's loop takes them
  runtime::init_logging({o.common.log_level, o.common.log_file, -1});
  launch::DaemonRuntime rt(launch::daemon_config("nanny", o.name, o.common));
  NannyOptions nanny;
  nanny.child_args.assign(argv + 1, argv + argc);
  nanny.child_args.push_back("--no-nanny");
  if (const auto at = draw_retire_at(o); at != std::chrono::system_clock::time_point{})
    ::setenv(kRetireAtEnv, std::to_string(epoch_ms(at)).c_str(), 1);
  else
    ::unsetenv(kRetireAtEnv);
  nanny.rejoin_args = with_connect_timeout(nanny.child_args, o.death_timeout);
  nanny.scheduler = o.scheduler;
  nanny.scheduler_file = o.scheduler_file;
  nanny.restart_limit = o.restart_limit;
  return run_nanny(rt.registry(), nanny);
}

// A task that never returns must not keep a closed worker alive: its thread cannot be
// stopped, so after kStopGrace the process leaves without it.
constexpr auto kStopGrace = std::chrono::seconds(3);

void stop_or_exit(worker::Worker& worker, int exit_status) {
  auto stopped = std::make_shared<std::promise<void>>();
  auto done = stopped->get_future();
  std::thread([&worker, stopped] {
    worker.stop();
    stopped->set_value();
  }).detach();
  if (done.wait_for(kStopGrace) == std::future_status::ready) return;
  std::string running;
  for (const auto& r : crash::running_in(crash::current()))
    running += fmt::format("{}'{}' ({})", running.empty() ? "" : ", ", r.key, r.function);
  spdlog::warn("worker {}: {} still running {} s after the worker closed; exiting without it",
               worker.name(), running.empty() ? "a task" : running, kStopGrace.count());
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  std::_Exit(exit_status);
}

worker::WorkerOptions worker_options(const MainOptions& o, const std::string& scheduler,
                                     bool nannied, std::chrono::milliseconds connect_timeout,
                                     std::chrono::system_clock::time_point retire_at) {
  worker::WorkerOptions options;
  options.scheduler_address = scheduler;
  options.name = o.name;
  options.nanny = nannied;
  options.nthreads = o.nthreads;
  options.inline_task_seconds = o.inline_task_us * 1e-6;
  options.listen_address = o.listen;
  options.host = o.host;
  options.interface = o.interface;
  options.heartbeat_interval = std::chrono::milliseconds(o.heartbeat_ms);
  options.connect_timeout = connect_timeout;
  options.fetch_timeout = std::chrono::milliseconds(o.fetch_timeout_ms);
  options.dashboard = !o.no_dashboard;
  options.dashboard_address = o.dashboard_address;
  options.memory = memory_options(o);
  options.resources = runtime::parse_resources(o.resources, "--resources");
  options.retire_at = retire_at;
  options.retire_grace = *launch::parse_timeout(o.lifetime_grace, "--lifetime-grace");
  return options;
}

/// Connects (waiting for the scheduler); false if a signal ended the wait.
bool start_or_stop(worker::Worker& worker, const launch::SchedulerWait& where,
                   launch::StopSignals& stops) {
  stops.on_stop([&worker](int signo) {
    spdlog::info("worker: signal {} received, shutting down", signo);
    worker.request_stop();  // also ends start()'s wait for the scheduler
  });
  try {
    worker.start();
    return true;
  } catch (const comm::CommError& e) {
    if (stops.received()) return false;
    throw std::runtime_error(e.what() + where.advice(e.code()));
  }
}

// One worker's life, from waiting for its scheduler to its close. nullopt: the worker lost
// its scheduler (or was dropped by it) and should join again; otherwise the exit status.
// `rejoining`: the wait is bounded by --death-timeout instead of --connect-timeout.
// `kept`: in, the results of the worker this one replaces; out, this one's, when it is to
// join again.
std::optional<int> serve_once(const MainOptions& o, launch::DaemonRuntime& rt,
                              launch::StopSignals& stops, bool nannied, bool rejoining,
                              std::shared_ptr<worker::KeptData>& kept,
                              std::chrono::system_clock::time_point retire_at) {
  const auto& timeout = rejoining ? o.death_timeout : o.connect_timeout;
  const char* flag = rejoining ? "--death-timeout" : "--connect-timeout";
  const launch::SchedulerWait where{o.scheduler, o.scheduler_file,
                                     launch::parse_timeout(timeout, flag), timeout};
  const auto scheduler = launch::find_scheduler(where, stops);
  if (!scheduler) {
    spdlog::info("worker: signal {} received while waiting for the scheduler file; exiting",
                 stops.received());
    return launch::kExitClean;
  }
  worker::Worker worker(rt.context(), rt.registry(),
                        worker_options(o, *scheduler, nannied, where.left(), retire_at),
                        std::move(kept));
  if (!start_or_stop(worker, where, stops)) return launch::kExitClean;
  fmt::print("taskwire-worker {} at {} (scheduler {})\n", worker.name(), worker.address(),
             *scheduler);
  std::fflush(stdout);

  worker.wait_closed();
  stops.on_stop({});
  const auto status = worker.close_status();
  // A stuck task may keep the worker from stopping: the process then leaves, and a nanny
  // starts a fresh one that joins again.
  stop_or_exit(worker, status.clean            ? launch::kExitClean
                       : status.scheduler_lost ? kExitRejoin
                                               : launch::kExitFailure);
  if (status.scheduler_lost && !stops.received()) {
    const std::size_t held = worker.data().size();
    kept = worker.keep_data();
    spdlog::warn("worker: {}; waiting for the scheduler to join again (--death-timeout {}), "
                 "keeping {} result(s)",
                 status.reason, o.death_timeout, held);
    return std::nullopt;
  }
  if (!status.clean) throw std::runtime_error(status.reason);
  spdlog::info("worker: stopped ({})", status.reason);
  return launch::kExitClean;
}

int run_worker(const MainOptions& o) {
  const bool nannied = adopt_nanny();
  runtime::init_logging({o.common.log_level, o.common.log_file, -1, nannied});
  crash::install_fatal_signal_handlers(
      fmt::format("taskwire-worker {}(pid {})", o.name.empty() ? "" : o.name + " ", ::getpid()));
  for (const auto& lib : o.libraries) launch::preload_library(lib);
  launch::DaemonRuntime rt(launch::daemon_config("worker", o.name, o.common));
  launch::StopSignals stops(rt.context());
  // As Dask's worker reconnects: a blip (a partition, a frozen process, a scheduler
  // restarted) must not shrink the cluster for good. The wait for the scheduler is bounded
  // by --death-timeout each time, so that a worker whose scheduler is gone for good ends.
  std::shared_ptr<worker::KeptData> kept;
  const auto retire = retire_at(o, nannied);  // one deadline for every rejoin
  for (bool rejoining = false;; rejoining = true)
    if (auto rc = serve_once(o, rt, stops, nannied, rejoining, kept, retire)) return *rc;
}

}  // namespace

int main(int argc, char* argv[]) {
  MainOptions options;
  const auto desc = describe(options);
  po::positional_options_description positional;
  positional.add("scheduler", 1);
  if (auto rc = launch::parse_daemon_command_line(kProgram, argc, argv, desc, &positional,
                                                   [&] { check(options); }))
    return *rc;
  return launch::run_daemon(kProgram, [&] {
    return options.no_nanny ? run_worker(options) : run_as_nanny(argc, argv, options);
  });
}
