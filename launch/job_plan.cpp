#include <taskwire/launch/job_plan.hpp>

#include <taskwire/launch/command.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace taskwire::launch {

using namespace std::chrono_literals;

unsigned workers_per_job(const JobClusterOptions& o) { return std::max(1u, o.nodes) * o.processes; }

void check_nodes(const JobClusterOptions& o, const BatchSystem& batch) {
  if (o.nodes > 1 && (batch.on_each_node(o.nodes).empty() || batch.node_index_variable().empty()))
    throw std::invalid_argument(fmt::format(
        "nodes = {}: {} runs jobs of one node only here; give nodes = 1", o.nodes, batch.name()));
}

std::string worker_command(const JobClusterOptions& o, const std::string& scheduler,
                           const BatchSystem& batch, std::uint64_t worker_memory) {
  std::vector<std::string> args{o.worker_executable, scheduler, "--nthreads",
                                std::to_string(std::max(1u, o.cores / o.processes))};
  if (worker_memory > 0) args.insert(args.end(), {"--memory-limit", std::to_string(worker_memory)});
  const auto death = fmt::format("{}s", o.death_timeout.count());
  args.insert(args.end(), {"--connect-timeout", death, "--death-timeout", death});
  if (const auto life = worker_lifetime(o); life.lifetime.count() > 0) {
    const auto text = [](std::chrono::seconds s) { return fmt::format("{}s", s.count()); };
    args.insert(args.end(), {"--lifetime", text(life.lifetime), "--lifetime-stagger",
                             life.stagger.count() > 0 ? text(life.stagger) : "0",
                             "--lifetime-grace", text(std::max(life.grace, 1s))});
  }
  args.insert(args.end(), o.worker_extra_args.begin(), o.worker_extra_args.end());
  const auto line = command_line(args);
  check_nodes(o, batch);
  const auto launcher = o.nodes > 1 ? batch.on_each_node(o.nodes) : std::vector<std::string>{};
  const auto node = batch.node_index_variable();
  // Worker i of a node is worker NODE * processes + i of the job.
  const auto name = [&](const std::string& i) {  // i: "0", or the loop's variable "i"
    auto index = i == "0" ? i : "$" + i;
    if (!launcher.empty()) index = fmt::format("$(({} * {} + {}))", node, o.processes, i);
    return fmt::format("--name \"{}-${{{}}}-{}\"", o.job_name, batch.job_id_variable(), index);
  };
  // A SIGTERM to the script alone (#SBATCH --signal=B:TERM@T) is passed on to the workers,
  // the script waits for them to close, so the job does not end under them, and ends 0: a
  // shutdown asked for is no failure.
  const auto on_node =
      o.processes == 1
          ? "exec " + line + " " + name("0")
          : fmt::format("trap 'kill $(jobs -p) 2>/dev/null; wait; exit 0' TERM\n"
                        "for i in $(seq 0 {}); do\n  {} {} &\ndone\nwait",
                        o.processes - 1, line, name("i"));
  if (launcher.empty()) return on_node;
  return "exec " + command_line(launcher) + " bash -c " + shell_quote(on_node);
}

WorkerLifetime worker_lifetime(const JobClusterOptions& o) {
  using std::chrono::seconds;
  const seconds wall = o.walltime;
  WorkerLifetime w;
  if (o.worker_lifetime.count() == 0 || (o.worker_lifetime.count() < 0 && wall.count() <= 0))
    return w;
  if (o.worker_lifetime.count() < 0) {  // dask-jobqueue's advice: leave before the walltime
    const bool long_job = wall > 10min;
    w.lifetime = long_job ? wall - 5min : wall * 8 / 10;
    w.stagger = long_job ? seconds(2min) : wall / 20;
    w.grace = long_job ? seconds(2min) : wall / 10;
  } else {
    w.lifetime = o.worker_lifetime;
    w.stagger = o.worker_lifetime / 20;
    w.grace = 60s;
  }
  if (o.worker_lifetime_stagger.count() >= 0) w.stagger = o.worker_lifetime_stagger;
  if (wall.count() > 0 && o.worker_lifetime.count() > 0) {
    const seconds left = wall - w.lifetime - w.stagger;
    if (left.count() <= 0)
      throw std::invalid_argument(fmt::format(
          "worker_lifetime {}s plus its stagger {}s leaves no time before the walltime {}s: "
          "give a shorter worker_lifetime so that workers retire before their job is killed",
          w.lifetime.count(), w.stagger.count(), wall.count()));
    w.grace = std::min<seconds>(left / 2, 2min);
  }
  if (o.worker_lifetime_grace.count() >= 0) w.grace = o.worker_lifetime_grace;
  return w;
}

JobSpec job_spec(const JobClusterOptions& o, std::string command, std::uint64_t job_memory) {
  JobSpec job;
  job.name = o.job_name;
  job.nodes = std::max(1u, o.nodes);
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
