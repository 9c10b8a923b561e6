// taskwire::SlurmCluster on the one-node Slurm of slurm_up.sh, driven by cluster_test.sh:
//   slurm_cluster_client scale WORKER PRELOAD     scale(4), a graph, scale(1); prints the time
//                                                 scale(4) took to 4 connected workers
//   slurm_cluster_client scancel WORKER PRELOAD   2 jobs of 2 workers; one job scancelled
//                                                 mid-graph: the graph stays right and a job
//                                                 replaces it
//   slurm_cluster_client adapt WORKER PRELOAD     adapt(0..4): idle, a burst, idle again
//   slurm_cluster_client drain WORKER PRELOAD     walltime 1 min, worker_lifetime 6 s: a
//                                                 2 000-task graph (500 tasks of 50 ms, then
//                                                 3 layers of adds over them, every result
//                                                 kept) runs across the retirement of the
//                                                 workers; jobs replace theirs, every result
//                                                 right, none erred, scale(2) holds
//   slurm_cluster_client hold WORKER PRELOAD      3 jobs of 2 cores on the 4-CPU node: 2 run,
//                                                 1 waits; prints "JOBS id id id" and waits to
//                                                 be killed (cluster_test.sh SIGKILLs it)
// Prints "CHECKED <what>" / "FAILED <what>"; exits 0 only if every check passed.
#include "tests/cluster/cluster_functions.hpp"
#include "tests/launch/checks.hpp"

#include <taskwire/client/client.hpp>
#include <taskwire/launch/slurm/slurm_cluster.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>

using namespace taskwire;
using namespace std::chrono_literals;
using launch_checks::check;
using launch_checks::failures;
using Clock = std::chrono::steady_clock;

namespace {

SlurmClusterOptions options(const std::string& worker, const std::string& preload) {
  return {.cores = 1,
          .memory = "512MiB",
          .walltime = std::chrono::minutes(5),
          .job_script_prologue = {"echo worker job $SLURM_JOB_ID on $(hostname)"},
          .worker_executable = worker,
          .worker_extra_args = {"--preload", preload, "--no-dashboard"},
          .death_timeout = std::chrono::seconds(10),
          .status_interval = 1s,
          .listen = "tcp://127.0.0.1:0"};
}

bool until(const std::function<bool()>& ok, std::chrono::seconds limit) {
  for (const auto end = Clock::now() + limit; Clock::now() < end;) {
    if (ok()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return ok();
}

void compute(Client& client, const std::string& label) {
  std::vector<int> xs(1000);
  std::iota(xs.begin(), xs.end(), 0);
  auto ys = client.gather(client.map(cluster_fns::inc, xs));
  check(std::accumulate(ys.begin(), ys.end(), 0L) == 1000L * 1001 / 2, label + ": a map of 1000");
  auto a = client.submit(cluster_fns::inc, 1);
  auto d = client.submit(cluster_fns::add, client.submit(cluster_fns::add, a, a),
                         client.submit(cluster_fns::add, a, 10));
  check(d.get() == 16, label + ": a diamond across workers");
}

void scale(SlurmCluster& cluster) {
  const auto script = cluster.job_script();
  fmt::print("{}", script);
  check(script.find("#SBATCH --cpus-per-task=1") != std::string::npos &&
            script.find("#SBATCH --mem=512M") != std::string::npos &&
            script.find("--connect-timeout 10s") != std::string::npos,
        "job_script() asks for cores and memory and gives the death timeout");
  const auto start = Clock::now();
  cluster.scale(4);
  const bool four = cluster.wait_for_workers(4, 60s);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  check(four, "scale(4): 4 workers connect");
  fmt::print("scale(4) to 4 connected workers: {:.2f} s\n", seconds);
  Client client{cluster};
  compute(client, "4 workers");
  check(client.scheduler_info().workers.size() == 4, "scheduler_info lists the 4 workers");
  std::vector<int> xs(100);
  std::iota(xs.begin(), xs.end(), 0);
  auto kept = client.map(cluster_fns::inc, xs);  // results on all 4 workers, held
  client.wait(kept);
  cluster.scale(1);  // 3 jobs go: their workers retire first, their results move
  check(until([&] { return client.scheduler_info().workers.size() == 1; }, 30s),
        "scale(1): 3 workers leave");
  check(until([&] { return cluster.jobs().size() == 1; }, 30s), "scale(1): one job left");
  const auto ys = client.gather(kept);
  check(std::accumulate(ys.begin(), ys.end(), 0L) == 100L * 101 / 2,
        "the results held across scale(1) are right");
  compute(client, "1 worker");
  check(cluster.submitted_jobs() == 4, "no job submitted beyond the 4");
}

void scancel_one(SlurmCluster& cluster) {
  cluster.scale(4);  // 2 jobs: processes = 2 (main)
  check(cluster.wait_for_workers(4, 60s), "scale(4): 4 workers in 2 jobs connect");
  check(cluster.jobs().size() == 2, "2 jobs of 2 workers");
  Client client{cluster};
  std::vector<Future<int>> heads;
  for (int c = 0; c < 8; ++c) {
    auto f = client.submit(cluster_fns::slow_inc, c * 100);
    for (int k = 0; k < 19; ++k) f = client.submit(cluster_fns::slow_inc, f);
    heads.push_back(f);
  }
  std::this_thread::sleep_for(300ms);
  const auto victim = cluster.jobs().front().id;
  fmt::print("scancel {} mid-graph\n", victim);
  std::fflush(stdout);
  check(std::system(("scancel " + victim).c_str()) == 0, "scancel of a job of 2 workers");
  const auto results = client.gather(heads);
  bool right = true;
  for (int c = 0; c < 8; ++c) right = right && results[c] == c * 100 + 20;
  check(right, "every chain right after 2 of its workers' job was scancelled");
  check(until([&] { return cluster.submitted_jobs() == 3 && cluster.jobs().size() == 2; }, 30s),
        "scale(4) holds: one job replaces the cancelled one");
  check(cluster.wait_for_workers(4, 30s), "4 workers again");
}

// Retirements at the workers' lifetime (6 +- 1 s) while a graph of 2 000 tasks runs (12 s
// of slow tasks on 2 workers); cluster_test.sh checks the log for lost data.
void drain(SlurmCluster& cluster) {
  constexpr int kWidth = 500, kLayers = 4;
  check(cluster.job_script().find("--lifetime 6s --lifetime-stagger 1s") != std::string::npos,
        "job_script() gives the workers their lifetime");
  cluster.scale(2);
  check(cluster.wait_for_workers(2, 60s), "scale(2): 2 workers connect");
  Client client{cluster};
  std::vector<Future<int>> layer;
  std::vector<long> expected;
  for (int i = 0; i < kWidth; ++i) {
    layer.push_back(client.submit(cluster_fns::slow_inc, i));
    expected.push_back(i + 1);
  }
  std::vector<Future<int>> kept = layer;
  for (int l = 1; l < kLayers; ++l) {
    std::vector<Future<int>> next;
    std::vector<long> next_expected;
    for (int i = 0; i < kWidth; ++i) {
      next.push_back(client.submit(cluster_fns::add, layer[i], layer[(i + 1) % kWidth]));
      next_expected.push_back(expected[i] + expected[(i + 1) % kWidth]);
    }
    layer = std::move(next);
    expected = std::move(next_expected);
    kept.insert(kept.end(), layer.begin(), layer.end());
  }
  const auto start = Clock::now();
  bool right = true;
  try {
    const auto last = client.gather(layer);
    for (int i = 0; i < kWidth; ++i) right = right && last[i] == expected[i];
    const auto first = client.gather(std::vector<Future<int>>(kept.begin(), kept.begin() + kWidth));
    for (int i = 0; i < kWidth; ++i) right = right && first[i] == i + 1;
  } catch (const std::exception& e) {
    check(false, std::string("no task erred: ") + e.what());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  check(right, fmt::format("{} tasks right across the workers' retirements ({:.1f} s)",
                           kLayers * kWidth, seconds));
  const auto submitted = cluster.submitted_jobs();
  fmt::print("DRAIN {} jobs submitted, graph {:.1f} s\n", submitted, seconds);
  check(submitted >= 3, fmt::format("jobs replaced the retired ones ({} submitted)", submitted));
  const auto holding = [&] {
    std::size_t staying = 0;
    for (const auto& j : cluster.jobs()) staying += !j.leaving;
    return staying == 2;
  };
  check(until(holding, 30s), "scale(2) holds: 2 jobs not leaving");
  // Released before the cluster cancels its jobs: none of them leaves holding a result.
  kept.clear();
  layer.clear();
  check(until([&] { return client.scheduler_info().tasks("memory") == 0; }, 10s),
        "every result released");
}

void adapt(SlurmCluster& cluster) {
  cluster.adapt({.minimum = 0, .maximum = 4, .interval = 200ms, .release_after = 3s});
  std::this_thread::sleep_for(2s);
  check(cluster.submitted_jobs() == 0, "idle: adapt submits nothing");
  Client client{cluster};
  std::vector<int> xs(400);
  std::iota(xs.begin(), xs.end(), 0);
  auto fs = client.map(cluster_fns::slow_inc, xs);
  check(until([&] { return cluster.jobs().size() == 4; }, 20s), "a burst: adapt asks for 4 jobs");
  // While tasks are pending, no job goes: sampled until the last result is in.
  std::atomic<bool> done{false};
  std::size_t fewest = 4;
  std::thread sampler([&] {
    while (!done) {
      fewest = std::min(fewest, cluster.jobs().size());
      std::this_thread::sleep_for(20ms);
    }
  });
  auto ys = client.gather(fs);
  done = true;
  sampler.join();
  check(fewest == 4, fmt::format("no job released while tasks were pending (fewest {})", fewest));
  check(std::accumulate(ys.begin(), ys.end(), 0L) == 400L * 401 / 2, "the burst's results");
  const auto after_burst = cluster.submitted_jobs();
  check(after_burst <= 4 + 2, fmt::format("at most peak + 2 sbatch calls ({})", after_burst));
  check(until([&] { return cluster.jobs().empty(); }, 20s), "idle again: back to 0 jobs");
  check(cluster.submitted_jobs() == after_burst, "no job submitted while idle");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fmt::print(stderr, "usage: slurm_cluster_client scale|scancel|adapt|hold WORKER PRELOAD\n");
    return 2;
  }
  const std::string mode = argv[1];
  try {
    auto o = options(argv[2], argv[3]);
    if (mode == "hold") o.cores = 2;  // the third job waits for a running one to end
    if (mode == "scancel") o.cores = o.processes = 2;
    if (mode == "drain") {
      o.walltime = std::chrono::minutes(1);  // Slurm's least: -t 1
      o.worker_lifetime = 6s;
      o.worker_lifetime_stagger = 1s;
    }
    SlurmCluster cluster(o);
    if (mode == "scale") scale(cluster);
    else if (mode == "scancel") scancel_one(cluster);
    else if (mode == "adapt") adapt(cluster);
    else if (mode == "drain") drain(cluster);
    else if (mode == "hold") {
      cluster.scale_jobs(3);
      check(cluster.wait_for_workers(2, 60s), "scale_jobs(3): 2 workers connect");
      check(until([&] { return cluster.jobs().size() == 3; }, 10s), "3 jobs queued or running");
      std::string ids;
      for (const auto& j : cluster.jobs()) ids += " " + j.id;
      fmt::print("JOBS{}\n", ids);
      std::fflush(stdout);
      std::this_thread::sleep_for(120s);  // killed by cluster_test.sh before that
    }
  } catch (const std::exception& e) {
    check(false, std::string("no exception: ") + e.what());
  }
  fmt::print("{}: {} failures\n", mode, failures);
  return failures == 0 ? 0 : 1;
}
