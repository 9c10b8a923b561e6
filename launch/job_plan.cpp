#include <taskwire/launch/job_plan.hpp>

#include <taskwire/launch/command.hpp>

#include <fmt/format.h>

namespace taskwire::launch {

std::string worker_command(const JobClusterOptions& o, const std::string& scheduler,
                           const std::string& job_id_variable, std::uint64_t worker_memory) {
  std::vector<std::string> args{o.worker_executable, scheduler, "--nthreads",
                                std::to_string(std::max(1u, o.cores / o.processes))};
  if (worker_memory > 0) args.insert(args.end(), {"--memory-limit", std::to_string(worker_memory)});
  const auto death = fmt::format("{}s", o.death_timeout.count());
  args.insert(args.end(), {"--connect-timeout", death, "--death-timeout", death});
  args.insert(args.end(), o.worker_extra_args.begin(), o.worker_extra_args.end());
  const auto line = command_line(args);
  const auto name = [&](const std::string& i) {
    return fmt::format("--name \"{}-${{{}}}-{}\"", o.job_name, job_id_variable, i);
  };
  if (o.processes == 1) return "exec " + line + " " + name("0");
  // A SIGTERM to the script alone (#SBATCH --signal=B:TERM@T) is passed on to the workers,
  // the script waits for them to close, so the job does not end under them, and ends 0: a
  // shutdown asked for is no failure.
  return fmt::format("trap 'kill $(jobs -p) 2>/dev/null; wait; exit 0' TERM\n"
                     "for i in $(seq 0 {}); do\n  {} {} &\ndone\nwait",
                     o.processes - 1, line, name("$i"));
}

JobSpec job_spec(const JobClusterOptions& o, std::string command, std::uint64_t job_memory) {
  JobSpec job;
  job.name = o.job_name;
  job.cores = o.cores;
  job.memory_bytes = job_memory;
  job.walltime = o.walltime;
  job.queue = o.queue;
  job.account = o.account;
  job.log_directory = o.log_directory;
  job.extra_directives = o.job_extra_directives;
  job.prologue = o.job_script_prologue;
  job.command = std::move(command);
  return job;
}

}  // namespace taskwire::launch
