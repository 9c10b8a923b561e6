// taskwire-jobqueue: SlurmCluster for shell users. It runs the scheduler, writes its address
// to a scheduler file, holds --workers (or --jobs) workers as Slurm jobs, or adapts between
// --adapt-minimum and --adapt-maximum, until SIGINT/SIGTERM or a client's shutdown(); then
// it cancels every job it started. A client finds the cluster with Client::from_scheduler_file(F).
//   taskwire-jobqueue --cores 4 --memory 16GiB --walltime 1h --workers 8
//     --worker-arg=--preload --worker-arg=/home/me/libtasks.so --scheduler-file sched.json
#include <taskwire/launch/job_plan.hpp>
#include <taskwire/launch/slurm/slurm_cluster.hpp>
#include <taskwire/launch/daemon_bootstrap.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/runtime/scheduler_file.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <optional>
#include <utility>

namespace po = boost::program_options;
using namespace taskwire;

namespace {

constexpr const char* kProgram = "taskwire-jobqueue";

struct MainOptions {
  SlurmClusterOptions cluster;
  std::size_t workers = 0, jobs = 0, adapt_minimum = 0, adapt_maximum = 0;
  bool adapt = false, print_script = false;
  std::string walltime = "30m", death_timeout = "60s", scheduler_file;
  std::string lifetime = "auto", lifetime_stagger = "auto", lifetime_grace = "auto";
  launch::DaemonCommonOptions common;
};

po::options_description describe(MainOptions& o) {
  auto& c = o.cluster;
  po::options_description desc(
      "taskwire-jobqueue: taskwire workers as Slurm batch jobs (sbatch/scancel), with the\n"
      "scheduler in this process. Runs until SIGINT/SIGTERM or a client's shutdown(), then\n"
      "cancels every job.\n\n"
      "usage: taskwire-jobqueue --workers N --scheduler-file F [options]\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "workers", po::value(&o.workers), "workers to hold (jobs: workers / (nodes x processes))")(
      "jobs", po::value(&o.jobs), "jobs to hold (instead of --workers)")(
      "adapt", po::bool_switch(&o.adapt), "adapt to the scheduler's load instead")(
      "adapt-minimum", po::value(&o.adapt_minimum)->default_value(0), "--adapt: fewest workers")(
      "adapt-maximum", po::value(&o.adapt_maximum)->default_value(0),
      "--adapt: most workers (0: no limit)")(
      "cores", po::value(&c.cores)->default_value(c.cores), "CPUs per job (per node)")(
      "memory", po::value(&c.memory), "memory per job (per node), e.g. 16GiB (default: none)")(
      "processes", po::value(&c.processes)->default_value(c.processes),
      "workers per job (per node)")(
      "nodes", po::value(&c.nodes)->default_value(c.nodes),
      "nodes per job, each running --processes workers (started by srun)")(
      "walltime", po::value(&o.walltime)->default_value(o.walltime),
      "each job's time limit: 90s, 30m, 2h")(
      "partition", po::value(&c.queue), "Slurm partition (#SBATCH -p)")(
      "account", po::value(&c.account), "account (#SBATCH -A)")(
      "job-extra", po::value(&c.job_extra_directives)->composing(),
      "an extra #SBATCH line, e.g. --job-extra=--gres=gpu:1; repeatable")(
      "prologue", po::value(&c.job_script_prologue)->composing(),
      "a shell line run before the workers; repeatable")(
      "log-directory", po::value(&c.log_directory), "where the jobs' output goes")(
      "job-name", po::value(&c.job_name)->default_value(c.job_name), "the jobs' name")(
      "worker", po::value(&c.worker_executable)->default_value(c.worker_executable),
      "the worker program as the jobs find it")(
      "worker-arg", po::value(&c.worker_extra_args)->composing(),
      "a taskwire-worker argument, e.g. --worker-arg=--preload --worker-arg=lib.so; repeatable")(
      "death-timeout", po::value(&o.death_timeout)->default_value(o.death_timeout),
      "workers that cannot reach the scheduler this long exit")(
      "lifetime", po::value(&o.lifetime)->default_value(o.lifetime),
      "each worker retires this long after it started (its tasks and data move to other "
      "workers, then it exits) and a job takes its place; auto: 5 minutes before the "
      "walltime when it is over 10 minutes, else at 80 % of it; none: never")(
      "lifetime-stagger", po::value(&o.lifetime_stagger)->default_value(o.lifetime_stagger),
      "+- this at random on each worker's lifetime; auto: from the walltime")(
      "lifetime-grace", po::value(&o.lifetime_grace)->default_value(o.lifetime_grace),
      "a retiring worker not closed by the scheduler this long after its lifetime exits by "
      "itself; auto: from the walltime")(
      "listen", po::value(&c.listen)->default_value(c.listen), "where the scheduler listens")(
      "host", po::value(&c.host), "the address workers are told (default: the host name's)")(
      "interface", po::value(&c.interface), "advertise this interface's address (e.g. ib0)")(
      "scheduler-file", po::value(&o.scheduler_file), "write the scheduler's address here")(
      "print-script", po::bool_switch(&o.print_script), "print the job script and exit");
  launch::add_daemon_common_options(desc, o.common, "also log to this file");
  return desc;
}

void check(MainOptions& o) {
  if (!o.print_script && !o.adapt && o.workers == 0 && o.jobs == 0)
    throw po::error("say how many: --workers N, --jobs N or --adapt");
  if (o.workers > 0 && o.jobs > 0) throw po::error("give --workers or --jobs, not both");
  const auto seconds = [](const std::string& text, const char* flag) {
    const auto t = launch::parse_timeout(text, flag);
    if (!t) throw po::error(std::string(flag) + " must be a duration");
    return std::chrono::duration_cast<std::chrono::seconds>(*t);
  };
  o.cluster.walltime = seconds(o.walltime, "--walltime");
  o.cluster.death_timeout = seconds(o.death_timeout, "--death-timeout");
  // auto: -1 (JobClusterOptions' own rule); none and 0: 0.
  const auto optional_seconds = [&](const std::string& text, const char* flag) {
    if (text == "auto") return std::chrono::seconds(-1);
    if (text == "none" || text == "0") return std::chrono::seconds(0);
    return seconds(text, flag);
  };
  o.cluster.worker_lifetime = optional_seconds(o.lifetime, "--lifetime");
  o.cluster.worker_lifetime_stagger = optional_seconds(o.lifetime_stagger, "--lifetime-stagger");
  o.cluster.worker_lifetime_grace = optional_seconds(o.lifetime_grace, "--lifetime-grace");
  try {
    launch::worker_lifetime(o.cluster);
  } catch (const std::invalid_argument& e) {
    throw po::error(e.what());
  }
}

// The jobs get this process's environment from sbatch, not its flags: a token or TLS file
// given as a flag is passed on to the workers there.
void export_for_jobs(const launch::DaemonCommonOptions& common) {
  for (const auto& [name, value] : {std::pair{"TASKWIRE_AUTH_TOKEN", &common.auth_token},
                                    {"TASKWIRE_TLS_CA_FILE", &common.tls.ca_file},
                                    {"TASKWIRE_TLS_CERT", &common.tls.cert_file},
                                    {"TASKWIRE_TLS_KEY", &common.tls.key_file}})
    if (!value->empty()) ::setenv(name, value->c_str(), 1);
}

int run(MainOptions& o) {
  runtime::init_logging({.level = o.common.log_level, .file = o.common.log_file});
  o.cluster.config = launch::daemon_config("jobqueue", "", o.common);
  export_for_jobs(o.common);
  launch::DaemonRuntime rt(o.cluster.config);
  launch::StopSignals stops(rt.context());
  SlurmCluster cluster(o.cluster);
  if (o.print_script) {
    fmt::print("{}", cluster.job_script());
    return launch::kExitClean;
  }
  if (!o.scheduler_file.empty())
    runtime::SchedulerFile{{cluster.scheduler_address()}}.write(o.scheduler_file);
  fmt::print("taskwire-jobqueue: scheduler at {}\n", cluster.scheduler_address());
  std::fflush(stdout);
  if (o.adapt)
    cluster.adapt({.minimum = o.adapt_minimum,
                   .maximum = o.adapt_maximum ? o.adapt_maximum : AdaptOptions{}.maximum});
  else if (o.jobs > 0)
    cluster.scale_jobs(o.jobs);
  else
    cluster.scale(o.workers);
  // Until a signal, or a client's shutdown() (its workers leave, their jobs end).
  while (stops.wait_for(std::chrono::seconds(1)) == 0 && !cluster.shut_down()) {
  }
  if (stops.received())
    spdlog::info("taskwire-jobqueue: signal {}: cancelling every job", stops.received());
  else
    spdlog::info("taskwire-jobqueue: a client shut the cluster down");
  cluster.close();
  return launch::kExitClean;
}

}  // namespace

int main(int argc, char* argv[]) {
  MainOptions options;
  const auto desc = describe(options);
  if (auto rc = launch::parse_daemon_command_line(kProgram, argc, argv, desc, nullptr,
                                                   [&] { check(options); }))
    return *rc;
  return launch::run_daemon(kProgram, [&] { return run(options); });
}
