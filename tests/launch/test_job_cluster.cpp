// launch/: the parts of SlurmCluster that need no Slurm. The job script and Slurm's formats,
// the adaptive policy on a made-up clock, running a command, and JobCluster's bookkeeping
// over a fake batch system whose jobs the test starts and ends.
#include <taskwire/launch/adaptive.hpp>
#include <taskwire/launch/command.hpp>
#include <taskwire/launch/job_cluster.hpp>
#include <taskwire/launch/job_plan.hpp>
#include <taskwire/launch/slurm/slurm_batch.hpp>
#include <taskwire/client/client.hpp>
#include <taskwire/comm/backends.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

using namespace taskwire::launch;
namespace runtime = taskwire::runtime;
namespace comm = taskwire::comm;
namespace worker = taskwire::worker;
using namespace std::chrono_literals;

TEST_CASE("launch: the Slurm job script asks for what the options say", "[launch]") {
  JobClusterOptions o{.cores = 8, .memory = "16GiB", .processes = 2, .walltime = 90min,
                      .queue = "compute", .account = "proj42",
                      .job_extra_directives = {"--gres=gpu:1"},
                      .job_script_prologue = {"module load mpich"},
                      .log_directory = "/scratch/logs",
                      .worker_extra_args = {"--preload", "/home/me/lib tasks.so"},
                      .death_timeout = 30s};
  const std::uint64_t worker_memory = (16ull << 30) / 2;
  const auto script = SlurmBatch().job_script(
      job_spec(o, worker_command(o, "tcp://10.0.0.5:8786", SlurmBatch(), worker_memory),
               2 * worker_memory));
  for (const char* line :
       {"#!/usr/bin/env bash\n", "#SBATCH -J taskwire-worker\n", "#SBATCH -n 1\n",
        "#SBATCH --cpus-per-task=8\n", "#SBATCH --mem=16384M\n", "#SBATCH -t 01:30:00\n",
        "#SBATCH -p compute\n", "#SBATCH -A proj42\n", "#SBATCH -o /scratch/logs/%x-%j.out\n",
        "#SBATCH --gres=gpu:1\n", "module load mpich\n",
        "trap 'kill $(jobs -p) 2>/dev/null; wait; exit 0' TERM\nfor i in $(seq 0 1); do\n",
        "taskwire-worker tcp://10.0.0.5:8786 --nthreads 4 --memory-limit 8589934592 "
        "--connect-timeout 30s --death-timeout 30s --lifetime 5100s --lifetime-stagger 120s "
        "--lifetime-grace 120s --preload '/home/me/lib tasks.so' "
        "--name \"taskwire-worker-${SLURM_JOB_ID}-$i\" &\n",
        "done\nwait\n"})
    CHECK_THAT(script, Catch::Contains(line));
  // The prologue runs before the workers.
  CHECK(script.find("module load") < script.find("taskwire-worker tcp://"));
  // One worker per job: exec'ed, so Slurm's SIGTERM reaches its nanny.
  JobClusterOptions one;
  CHECK(worker_command(one, "tcp://h:1", SlurmBatch(), 0) ==
        "exec taskwire-worker tcp://h:1 --nthreads 1 --connect-timeout 60s --death-timeout 60s "
        "--lifetime 1500s --lifetime-stagger 120s --lifetime-grace 120s "
        "--name \"taskwire-worker-${SLURM_JOB_ID}-0\"");
}

namespace {

// A directory with stand-ins for srun (runs its command once per node, SLURM_NODEID set, as
// srun does) and taskwire-worker (writes each argument on a line of its own to OUT/args-PID).
std::filesystem::path fake_slurm_bin() {
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("taskwire-fake-srun-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const char* text) {
    std::ofstream(dir / name) << text;
    std::filesystem::permissions(dir / name, std::filesystem::perms::owner_all);
  };
  write("srun",
        "#!/usr/bin/env bash\n"
        "nodes=1\n"
        "while [ \"${1#--}\" != \"$1\" ]; do\n"
        "  case $1 in --nodes=*) nodes=${1#--nodes=} ;; esac; shift\n"
        "done\n"
        "for n in $(seq 0 $((nodes - 1))); do SLURM_NODEID=$n \"$@\" & done\n"
        "wait\n");
  write("taskwire-worker",
        "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > \"$FAKE_OUT/args-$$\"\n");
  return dir;
}

}  // namespace

TEST_CASE("launch: a job of several nodes starts its workers on each node through srun, "
          "named across the job, arguments intact", "[launch]") {
  JobClusterOptions o{.cores = 4, .processes = 2, .nodes = 2, .walltime = 0s,
                      .worker_extra_args = {"--preload", "/home/me/it's a lib.so"}};
  const auto command = worker_command(o, "tcp://10.0.0.5:8786", SlurmBatch(), 0);
  const auto script = SlurmBatch().job_script(job_spec(o, command, 0));
  for (const char* line : {"#SBATCH -N 2\n", "#SBATCH --ntasks-per-node=1\n",
                           "#SBATCH --cpus-per-task=4\n",
                           "exec srun --nodes=2 --ntasks-per-node=1 --kill-on-bad-exit=0 bash -c "})
    CHECK_THAT(script, Catch::Contains(line));
  CHECK_THAT(script, !Catch::Contains("#SBATCH -n 1\n"));
  CHECK(workers_per_job(o) == 4);

  const auto bin = fake_slurm_bin();
  const auto out = bin / "out";
  std::filesystem::create_directories(out);
  const auto run = run_command(
      {"env", "PATH=" + bin.string() + ":/usr/bin:/bin", "SLURM_JOB_ID=77",
       "FAKE_OUT=" + out.string(), "bash", "-c", command},
      "", 20s);
  INFO(command << "\n" << run.output);
  REQUIRE(run.status == 0);
  std::set<std::string> names;
  for (const auto& file : std::filesystem::directory_iterator(out)) {
    std::ifstream in(file.path());
    std::vector<std::string> args;
    for (std::string a; std::getline(in, a);) args.push_back(a);
    REQUIRE(args.size() >= 4);
    CHECK(args[0] == "tcp://10.0.0.5:8786");
    const auto preload = std::find(args.begin(), args.end(), "--preload");
    REQUIRE(preload + 1 < args.end());
    CHECK(preload[1] == "/home/me/it's a lib.so");
    CHECK(args[args.size() - 2] == "--name");
    names.insert(args.back());
  }
  std::filesystem::remove_all(bin);
  CHECK(names == std::set<std::string>{"taskwire-worker-77-0", "taskwire-worker-77-1",
                                       "taskwire-worker-77-2", "taskwire-worker-77-3"});
}

TEST_CASE("launch: workers retire before the walltime, as the options or the walltime say",
          "[launch][retirement]") {
  const auto life = [](JobClusterOptions o) {
    const auto w = worker_lifetime(o);
    return std::vector<long>{w.lifetime.count(), w.stagger.count(), w.grace.count()};
  };
  CHECK(life({.walltime = 1h}) == std::vector<long>{55 * 60, 120, 120});
  CHECK(life({.walltime = 10min}) == std::vector<long>{480, 30, 60});
  CHECK(life({.walltime = 60s}) == std::vector<long>{48, 3, 6});
  CHECK(life({.walltime = 0s}) == std::vector<long>{0, 0, 0});  // the queue's: unknown
  CHECK(life({.walltime = 1h, .worker_lifetime = 0s}) == std::vector<long>{0, 0, 0});
  // Explicit: a twentieth of it as stagger, half of what is left before the walltime (at
  // most 2 minutes) as grace.
  CHECK(life({.walltime = 60s, .worker_lifetime = 10s, .worker_lifetime_stagger = 2s}) ==
        std::vector<long>{10, 2, 24});
  CHECK(life({.walltime = 1h, .worker_lifetime = 40min}) == std::vector<long>{2400, 120, 120});
  CHECK(life({.walltime = 0s, .worker_lifetime = 40s, .worker_lifetime_grace = 5s}) ==
        std::vector<long>{40, 2, 5});
  CHECK_THROWS_WITH(worker_lifetime({.walltime = 60s, .worker_lifetime = 60s}),
                    Catch::Contains("leaves no time before the walltime"));
  CHECK_THAT(worker_command({.walltime = 60s, .worker_lifetime = 10s,
                             .worker_lifetime_stagger = 0s},
                            "tcp://h:1", SlurmBatch(), 0),
             Catch::Contains("--lifetime 10s --lifetime-stagger 0 --lifetime-grace 25s"));
}

TEST_CASE("launch: times and job states in Slurm's words", "[launch]") {
  CHECK(slurm_time(45s) == "00:45");
  CHECK(slurm_time(30min) == "30:00");
  CHECK(slurm_time(2h + 5s) == "02:00:05");
  CHECK(slurm_time(50h) == "2-02:00:00");
  CHECK(slurm_job_state("PENDING") == JobState::pending);
  CHECK(slurm_job_state("CONFIGURING") == JobState::pending);
  CHECK(slurm_job_state("RUNNING") == JobState::running);
  CHECK(slurm_job_state("COMPLETING") == JobState::finished);
  CHECK(slurm_job_state("TIMEOUT") == JobState::finished);
}

TEST_CASE("adapt: up at once, down only after a sustained idle, never with work pending",
          "[launch]") {
  AdaptivePolicy p({.minimum = 1, .maximum = 8, .release_after = 10s}, 0);
  const auto t0 = AdaptivePolicy::Clock::time_point{};
  CHECK(p.target({}, t0) == 1);  // the minimum, at once
  CHECK(p.target({.runnable = 100, .threads_per_worker = 4}, t0 + 1s) == 8);  // the maximum
  CHECK(p.target({.runnable = 6, .threads_per_worker = 4}, t0 + 2s) == 8);  // work pending
  CHECK(p.target({.waiting = 3}, t0 + 3s) == 8);  // still pending
  CHECK(p.target({}, t0 + 4s) == 8);       // idle from here...
  CHECK(p.target({}, t0 + 13s) == 8);      // ...9 s: kept
  CHECK(p.target({.runnable = 1}, t0 + 13500ms) == 8);  // a task: the idle count restarts
  CHECK(p.target({}, t0 + 14s) == 8);
  CHECK(p.target({}, t0 + 23s) == 8);
  CHECK(p.target({}, t0 + 24s) == 1);      // 10 s idle: down to the minimum
  CHECK(p.wanted({.runnable = 9, .threads_per_worker = 4}) == 3);
  CHECK(p.wanted({.waiting = 2}) == 1);
}

TEST_CASE("launch: run_command feeds stdin, collects output, kills at the deadline",
          "[launch]") {
  const auto cat = run_command({"cat"}, "a script\n", 10s);
  CHECK(cat.status == 0);
  CHECK(cat.output == "a script\n");
  const auto both = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"}, "", 10s);
  CHECK(both.status == 3);
  CHECK_THAT(both.output, Catch::Contains("out") && Catch::Contains("err"));
  const auto slow = run_command({"sleep", "30"}, "", 200ms);
  CHECK(slow.status == 128 + 9);
  CHECK_THAT(slow.output, Catch::Contains("killed after 200 ms"));
  // A command that exits without reading its input: no SIGPIPE for this program.
  CHECK(run_command({"true"}, std::string(1 << 20, 'x'), 10s).status == 0);
  CHECK_THROWS_WITH(run_command({"/nonexistent/sbatch"}, "", 1s), Catch::Contains("cannot run"));
}

namespace {

// A batch system whose jobs run when the test says: submit() queues them pending.
struct FakeBatch final : BatchSystem {
  std::mutex mu;
  std::map<std::string, JobState> jobs;
  std::vector<std::string> cancelled;
  int next = 100;
  std::string name() const override { return "fake"; }
  std::string job_id_variable() const override { return "FAKE_JOB_ID"; }
  std::string job_script(const JobSpec& job) const override { return job.command; }
  std::string submit(const std::string&) override {
    std::lock_guard lock(mu);
    const auto id = std::to_string(next++);
    jobs[id] = JobState::pending;
    return id;
  }
  void cancel(const std::vector<std::string>& ids) override {
    std::lock_guard lock(mu);
    for (const auto& id : ids) jobs[id] = JobState::finished, cancelled.push_back(id);
  }
  std::map<std::string, JobState> states(const std::vector<std::string>& ids) override {
    std::lock_guard lock(mu);
    std::map<std::string, JobState> out;
    for (const auto& id : ids) out[id] = jobs.count(id) ? jobs[id] : JobState::finished;
    return out;
  }
  void set(const std::string& id, JobState s) {
    std::lock_guard lock(mu);
    jobs[id] = s;
  }
  std::size_t count() {
    std::lock_guard lock(mu);
    return jobs.size();
  }
  std::vector<std::string> cancelled_ids() {
    std::lock_guard lock(mu);
    return cancelled;
  }
};

// A job cluster over a fake batch system that the test drives through `batch`: one worker
// per job, checked every 100 ms, its scheduler on loopback.
struct FakeJobCluster {
  FakeBatch& batch;
  JobCluster cluster;
  FakeJobCluster() : FakeJobCluster(std::make_unique<FakeBatch>()) {}

 private:
  explicit FakeJobCluster(std::unique_ptr<FakeBatch> owned)
      : batch(*owned), cluster(std::move(owned), {.processes = 1, .status_interval = 100ms,
                                                   .listen = "tcp://127.0.0.1:0"}) {}
};

// Workers the jobs of a fake batch would start: real ones, in this process, named as a job's
// script names them (JOBNAME-JOBID-0).
struct JobWorkers {
  runtime::Context context{runtime::Config::from_env(), 1};
  comm::Registry registry{context};
  std::string scheduler;
  explicit JobWorkers(std::string scheduler_address) : scheduler(std::move(scheduler_address)) {
    comm::register_builtin_backends(registry);
    context.start();
  }
  ~JobWorkers() { context.stop(); }
  std::unique_ptr<worker::Worker> start(const std::string& job,
                                        std::chrono::system_clock::time_point retire_at = {}) {
    worker::WorkerOptions o;
    o.scheduler_address = scheduler;
    o.name = "taskwire-worker-" + job + "-0";
    o.retire_at = retire_at;
    auto w = std::make_unique<worker::Worker>(context, registry, o);
    w->start();
    return w;
  }
};

bool until(const std::function<bool()>& ok) {
  for (int i = 0; i < 200 && !ok(); ++i) std::this_thread::sleep_for(25ms);
  return ok();
}

}  // namespace

TEST_CASE("launch: nodes = 0, or several nodes where the batch system has no launcher, is an "
          "error that says so", "[launch]") {
  // FakeBatch, like a batch system without srun, has no launcher on each node.
  CHECK_THROWS_WITH(worker_command({.nodes = 2}, "tcp://h:1", FakeBatch(), 0),
                    Catch::Contains("jobs of one node only"));
  CHECK_THROWS_WITH(JobCluster(std::make_unique<FakeBatch>(), {.nodes = 2}),
                    Catch::Contains("jobs of one node only"));
  CHECK_THROWS_WITH(JobCluster(std::make_unique<SlurmBatch>(), {.nodes = 0}),
                    Catch::Contains("nodes must be at least 1"));
}

TEST_CASE("job cluster: scale submits and cancels, replaces a job that ended, gives up on "
          "jobs that never start, cancels everything at the end", "[launch]") {
  FakeJobCluster fake;
  auto& [batch, cluster] = fake;
  CHECK_THAT(cluster.scheduler_address(), Catch::StartsWith("tcp://127.0.0.1:"));
  CHECK_THAT(cluster.job_script(), Catch::Contains("${FAKE_JOB_ID}"));
  cluster.scale(3);
  CHECK(cluster.submitted_jobs() == 3);
  CHECK(cluster.jobs().size() == 3);
  batch.set("100", JobState::running);
  cluster.scale(1);  // the two pending ones go, newest first; the running one stays
  CHECK(batch.cancelled == std::vector<std::string>{"102", "101"});
  REQUIRE(cluster.jobs().size() == 1);
  CHECK(cluster.jobs().front().id == "100");
  // A job that ends by itself (its walltime) is replaced: scale(1) holds. It never had a
  // worker (no real worker here), so it counts as a failed start, as do the next two.
  batch.set("100", JobState::finished);
  CHECK(until([&] { return cluster.submitted_jobs() == 4; }));
  batch.set("103", JobState::finished);
  CHECK(until([&] { return cluster.submitted_jobs() == 5; }));
  batch.set("104", JobState::finished);
  CHECK(until([&] { return cluster.jobs().empty(); }));
  const std::size_t checked = cluster.status_checks();
  REQUIRE(until([&] { return cluster.status_checks() >= checked + 3; }));
  CHECK(cluster.submitted_jobs() == 5);  // three failed starts in a row: no more
  cluster.scale(2);  // an explicit scale tries again
  CHECK(cluster.submitted_jobs() == 7);
  cluster.close();
  CHECK(batch.cancelled.size() == 4);  // 102, 101, then both of the last two
  cluster.close();  // idempotent
  CHECK(cluster.shut_down());
  CHECK_THROWS_AS(cluster.scale(1), std::logic_error);  // no job submitted after close()
  CHECK(batch.count() == 7);
}

TEST_CASE("job cluster: a job whose workers retire is replaced at once, and its data moves to "
          "the new job's worker",
          "[launch][retirement]") {
  FakeJobCluster fake;
  auto& [batch, cluster] = fake;
  cluster.scale(1);
  batch.set("100", JobState::running);
  JobWorkers workers(cluster.scheduler_address());
  auto first = workers.start("100", std::chrono::system_clock::now() + 1s);
  REQUIRE(cluster.wait_for_workers(1, 10s));
  taskwire::Client client(cluster.scheduler_address());
  auto kept = client.scatter(41);  // its only copy is on job 100's worker
  // Its lifetime ends; with no other worker to take the data it waits, but counts no more.
  REQUIRE(until([&] { return cluster.submitted_jobs() == 2; }));
  const auto jobs = cluster.jobs();
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].id == "100");
  CHECK(jobs[0].leaving);
  CHECK_FALSE(jobs[1].leaving);
  CHECK_FALSE(first->close_status().closed);
  auto second = workers.start("101");
  REQUIRE(first->wait_closed(10s));  // retired once the data was copied
  CHECK(first->close_status().clean);
  CHECK(kept.get() == 41);
  batch.set("100", JobState::finished);  // its script ended with its worker
  const std::size_t checked = cluster.status_checks();
  REQUIRE(until([&] { return cluster.status_checks() >= checked + 3; }));
  CHECK(cluster.submitted_jobs() == 2);  // replaced once, not twice
  CHECK(cluster.jobs().size() == 1);
  second->stop();
  first->stop();
  cluster.close();
}

TEST_CASE("job cluster: scaling down retires the workers of the job going (its data moves to "
          "the job staying) and cancels it only once they left",
          "[launch][retirement]") {
  FakeJobCluster fake;
  auto& [batch, cluster] = fake;
  cluster.scale(2);
  batch.set("100", JobState::running);
  batch.set("101", JobState::running);
  JobWorkers workers(cluster.scheduler_address());
  auto staying = workers.start("100");
  auto going = workers.start("101");
  REQUIRE(cluster.wait_for_workers(2, 10s));
  taskwire::Client client(cluster.scheduler_address());
  auto big = client.scatter(std::vector<int>(1000, 1), {.workers = {"taskwire-worker-100-0"}});
  auto small = client.scatter(41, {.workers = {"taskwire-worker-101-0"}});
  const std::size_t seen = cluster.status_checks();
  REQUIRE(until([&] { return cluster.status_checks() >= seen + 2; }));  // it saw the bytes

  cluster.scale(1);  // job 101 holds fewer bytes: it goes
  CHECK(batch.cancelled_ids().empty());  // not scancelled under its worker
  const auto jobs = cluster.jobs();
  REQUIRE(jobs.size() == 2);
  CHECK_FALSE(jobs[0].draining);
  CHECK(jobs[1].draining);
  REQUIRE(going->wait_closed(10s));  // retired: its data went to job 100's worker
  CHECK(going->close_status().clean);
  REQUIRE(until([&] { return batch.cancelled_ids() == std::vector<std::string>{"101"}; }));
  CHECK(small.get() == 41);
  REQUIRE(cluster.jobs().size() == 1);
  CHECK(cluster.jobs()[0].id == "100");
  CHECK(cluster.submitted_jobs() == 2);  // a job scaled down is not replaced

  // scale(0): the last worker's data has nowhere to go: its job is cancelled at once.
  cluster.scale(0);
  CHECK(batch.cancelled_ids().size() == 2);
  CHECK(cluster.jobs().empty());
  CHECK(cluster.submitted_jobs() == 2);
  going->stop();
  staying->stop();
  cluster.close();
}

namespace {

// Each worker's results, as the scheduler sees them, by worker name.
std::map<std::string, std::size_t> keys_held(taskwire::Client& client) {
  std::map<std::string, std::size_t> out;
  for (const auto& w : client.scheduler_info().workers) out[w.name] = w.keys_held;
  return out;
}

}  // namespace

// dask-jobqueue's scale(0) (SpecCluster) closes the workers: their retirement finds no
// recipient, so nothing is copied, and their data is lost. Retiring them first here copied
// each worker's data onto another worker about to go too, and cancelled the jobs only at
// the next check.
TEST_CASE("job cluster: scale(0) and adapt down to 0 cancel every job at once, copying no "
          "data between workers that all go",
          "[launch][retirement]") {
  FakeJobCluster fake;
  auto& [batch, cluster] = fake;
  JobWorkers workers(cluster.scheduler_address());
  taskwire::Client client(cluster.scheduler_address());
  const std::map<std::string, std::size_t> one_each = {{"taskwire-worker-100-0", 1},
                                                       {"taskwire-worker-101-0", 1}};
  cluster.scale(2);
  batch.set("100", JobState::running);
  batch.set("101", JobState::running);
  auto a = workers.start("100");
  auto b = workers.start("101");
  REQUIRE(cluster.wait_for_workers(2, 10s));
  auto on_a = client.scatter(1, {.workers = {"taskwire-worker-100-0"}});
  auto on_b = client.scatter(2, {.workers = {"taskwire-worker-101-0"}});
  REQUIRE(keys_held(client) == one_each);

  SECTION("scale(0)") {
    cluster.scale(0);
    // Cancelled within the call, both of them: no retirement to wait for.
    CHECK(batch.cancelled_ids() == std::vector<std::string>{"100", "101"});
    CHECK(cluster.jobs().empty());
  }
  SECTION("adapt down to a minimum of 0") {
    cluster.adapt({.minimum = 0, .maximum = 2, .interval = 100ms, .release_after = 300ms});
    REQUIRE(until([&] { return batch.cancelled_ids().size() == 2; }));
    CHECK(cluster.jobs().empty());
  }
  // The fake batch system kills nothing: the workers still run, and the scheduler was never
  // asked to retire them, so neither holds a copy of the other's data.
  const std::size_t seen = cluster.status_checks();
  REQUIRE(until([&] { return cluster.status_checks() >= seen + 3; }));
  CHECK(keys_held(client) == one_each);
  for (const auto& w : client.scheduler_info().workers) CHECK_FALSE(w.retiring);
  CHECK(cluster.submitted_jobs() == 2);
  b->stop();
  a->stop();
  cluster.close();
}

TEST_CASE("adapt: bursts separated by idle gaps shorter than release_after submit no more "
          "jobs than the peak, and release them only after the last burst",
          "[launch]") {
  // dask-jobqueue #701, #190, #498: workers released between two computations and requeued.
  AdaptivePolicy p({.minimum = 0, .maximum = 10, .release_after = 10s}, 0);
  auto now = AdaptivePolicy::Clock::time_point{};
  std::size_t held = 0, raised = 0, lowered = 0;
  const auto step = [&](const Load& load, std::chrono::milliseconds dt) {
    now += dt;
    const std::size_t target = p.target(load, now);
    raised += target > held;
    lowered += target < held;
    held = target;
  };
  for (int burst = 0; burst < 5; ++burst) {
    for (int i = 0; i < 20; ++i) step({.runnable = 40, .threads_per_worker = 4}, 500ms);
    for (int i = 0; i < 16; ++i) step({}, 500ms);  // 8 s idle: kept
  }
  CHECK(raised == 1);
  CHECK(lowered == 0);
  CHECK(held == 10);
  for (int i = 0; i < 30; ++i) step({}, 500ms);  // then idle for good
  CHECK(lowered == 1);
  CHECK(held == 0);
}
