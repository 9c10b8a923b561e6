#include <taskwire/launch/slurm/slurm_batch.hpp>

#include <taskwire/launch/command.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>
#include <unistd.h>

namespace taskwire::launch {

namespace {

CommandResult run_or_throw(const std::vector<std::string>& argv, const std::string& input,
                           std::chrono::milliseconds timeout) {
  CommandResult r;
  try {
    r = run_command(argv, input, timeout);
  } catch (const std::runtime_error& e) {
    throw BatchError(e.what());
  }
  if (r.status != 0)
    throw BatchError(fmt::format("{} exited {}: {}", command_line(argv), r.status, r.output));
  return r;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

SlurmBatch::SlurmBatch(SlurmCommands commands) : commands_(std::move(commands)) {}

std::string slurm_time(std::chrono::seconds walltime) {
  const long s = walltime.count(), days = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60;
  if (days > 0) return fmt::format("{}-{:02}:{:02}:{:02}", days, h, m, s % 60);
  if (h > 0) return fmt::format("{:02}:{:02}:{:02}", h, m, s % 60);
  return fmt::format("{:02}:{:02}", m, s % 60);
}

JobState slurm_job_state(const std::string& name) {
  if (name == "RUNNING") return JobState::running;
  for (const char* waiting : {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD",
                              "REQUEUE_FED", "RESIZING", "SUSPENDED", "STOPPED"})
    if (name == waiting) return JobState::pending;
  return JobState::finished;
}

std::string SlurmBatch::job_script(const JobSpec& job) const {
  std::string s = "#!/usr/bin/env bash\n";
  auto directive = [&s](const std::string& text) { s += "#SBATCH " + text + "\n"; };
  directive("-J " + job.name);
  // One task per node: the command itself on one node, the srun it execs on several
  // (job_plan.hpp's worker_command), each with all of its node's CPUs.
  if (job.nodes > 1) {
    directive(fmt::format("-N {}", job.nodes));
    directive("--ntasks-per-node=1");
  } else {
    directive("-n 1");
  }
  directive(fmt::format("--cpus-per-task={}", job.cores));
  // Slurm's --mem counts MiB: round up, so a worker's own limit fits inside the job's.
  if (job.memory_bytes > 0)
    directive(fmt::format("--mem={}M", (job.memory_bytes + (1u << 20) - 1) >> 20));
  if (job.walltime.count() > 0) directive("-t " + slurm_time(job.walltime));
  if (!job.queue.empty()) directive("-p " + job.queue);
  if (!job.account.empty()) directive("-A " + job.account);
  if (!job.log_directory.empty()) directive("-o " + job.log_directory + "/%x-%j.out");
  for (const auto& extra : job.extra_directives) directive(extra);
  s += "\n";
  for (const auto& line : job.prologue) s += line + "\n";
  s += job.command + "\n";
  return s;
}

std::vector<std::string> SlurmBatch::on_each_node(unsigned nodes) const {
  return {"srun", fmt::format("--nodes={}", nodes), "--ntasks-per-node=1",
          "--kill-on-bad-exit=0"};
}

std::string SlurmBatch::submit(const std::string& script) {
  const auto r = run_or_throw({commands_.sbatch, "--parsable"}, script, commands_.timeout);
  // "ID" or "ID;CLUSTER" on the last line; warnings may come before it.
  std::istringstream lines(r.output);
  std::string line, id;
  while (std::getline(lines, line)) {
    const auto field = line.substr(0, line.find(';'));
    if (all_digits(field)) id = field;
  }
  if (id.empty()) throw BatchError("sbatch --parsable printed no job id: " + r.output);
  return id;
}

void SlurmBatch::cancel(const std::vector<std::string>& ids) {
  if (ids.empty()) return;
  std::vector<std::string> argv{commands_.scancel};
  argv.insert(argv.end(), ids.begin(), ids.end());
  const auto r = run_command(argv, "", commands_.timeout);
  // scancel complains of jobs that ended meanwhile; that is what was wanted.
  if (r.status != 0) {
    if (r.output.find("already") == std::string::npos &&
        r.output.find("Invalid job id") == std::string::npos)
      throw BatchError(fmt::format("{} exited {}: {}", command_line(argv), r.status, r.output));
    spdlog::debug("{}: {}", command_line(argv), r.output);
  }
}

std::map<std::string, JobState> SlurmBatch::states(const std::vector<std::string>& ids) {
  std::map<std::string, JobState> out;
  for (const auto& id : ids) out[id] = JobState::finished;  // unless squeue lists it
  if (ids.empty()) return out;
  // The user's jobs, not `-j IDS`: a job id slurmctld has forgotten makes that form fail.
  const auto r = run_or_throw({commands_.squeue, "-h", "-o", "%i %T",
                               "--user=" + std::to_string(::getuid())},
                              "", commands_.timeout);
  std::istringstream lines(r.output);
  std::string id, state;
  while (lines >> id >> state)
    if (auto it = out.find(id); it != out.end()) it->second = slurm_job_state(state);
  return out;
}

}  // namespace taskwire::launch
