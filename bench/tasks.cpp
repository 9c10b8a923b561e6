#include "bench/tasks.hpp"

#include "bench/cluster_ranks.hpp"
#include "bench/local_cluster.hpp"
#include "bench/scrape.hpp"
#include "bench/stats.hpp"

#include <taskwire/launch/mpi/launch.hpp>

#include <taskwire/client/client.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdio>
#include <stdexcept>

namespace taskwire::bench {

int noop(int x) { return x; }
long long leaf(int x) { return x; }
long long add(long long a, long long b) { return a + b; }

}  // namespace taskwire::bench

TASKWIRE_REGISTER(taskwire::bench::noop);
TASKWIRE_REGISTER(taskwire::bench::leaf);
TASKWIRE_REGISTER(taskwire::bench::add);

namespace taskwire::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Fan-in: `leaves` leaf tasks reduced pairwise by a binary tree of add tasks (leaves - 1 of
// them); returns the root's value.
long long tree_reduce(Client& client, int leaves) {
  std::vector<int> inputs(leaves);
  for (int i = 0; i < leaves; ++i) inputs[i] = i;
  auto level = client.map(leaf, inputs);
  while (level.size() > 1) {
    std::vector<Future<long long>> next;
    next.reserve(level.size() / 2 + 1);
    for (std::size_t k = 0; k + 1 < level.size(); k += 2) next.push_back(client.submit(add, level[k], level[k + 1]));
    if (level.size() % 2) next.push_back(level.back());
    level = std::move(next);
  }
  return level.front().get();
}

struct Result {
  std::string workload;
  int tasks;
  double seconds;
};

// Every workload once per repeat on a connected client; medians.
std::vector<Result> run_workloads(Client& client, const TasksOptions& o) {
  std::vector<int> inputs(o.independent);
  for (int i = 0; i < o.independent; ++i) inputs[i] = i;
  client.submit(noop, 0).get();  // warm up connections between every component

  std::vector<Result> results;
  std::vector<double> runs;
  for (int r = 0; r < o.repeats && o.independent > 0; ++r) {
    auto t0 = Clock::now();
    auto fs = client.map(noop, inputs);
    auto out = client.gather(fs);
    runs.push_back(seconds_since(t0));
    if (out.back() != o.independent - 1) throw std::runtime_error("independent: wrong result");
  }
  if (o.independent > 0) results.push_back({"independent", o.independent, median(runs)});
  runs.clear();
  for (int r = 0; r < o.repeats && o.chain > 0; ++r) {
    auto t0 = Clock::now();
    auto f = client.submit(noop, 0);
    for (int i = 1; i < o.chain; ++i) f = client.submit(noop, f);
    f.get();
    runs.push_back(seconds_since(t0));
  }
  if (o.chain > 0) results.push_back({"chain", o.chain, median(runs)});
  runs.clear();
  if (o.fan_in > 0) {
    const long long expected = static_cast<long long>(o.fan_in) * (o.fan_in - 1) / 2;
    for (int r = 0; r < o.repeats; ++r) {
      auto t0 = Clock::now();
      const long long got = tree_reduce(client, o.fan_in);
      runs.push_back(seconds_since(t0));
      if (got != expected) throw std::runtime_error(fmt::format("fan-in: sum {} instead of {}", got, expected));
    }
    results.push_back({"fan-in", 2 * o.fan_in - 1, median(runs)});
  }
  std::vector<double> rts;
  for (int i = 0; i < o.roundtrips; ++i) {
    auto t0 = Clock::now();
    client.submit(noop, i).get();
    rts.push_back(seconds_since(t0));
  }
  if (o.roundtrips > 0) results.push_back({"roundtrip", 1, median(rts)});
  return results;
}

void print_header() {
  fmt::print("{:<8} {:<12} {:>7} {:>10} {:>12} {:>12}\n", "backend", "workload", "tasks", "seconds",
             "tasks/s", "us/task");
}

void print_results(const std::string& backend, const std::vector<Result>& results, CsvWriter& csv) {
  for (const auto& r : results) {
    const double per = r.seconds / r.tasks;
    fmt::print("{:<8} {:<12} {:>7} {:>10.4f} {:>12.0f} {:>12.1f}\n", backend, r.workload, r.tasks,
               r.seconds, 1.0 / per, per * 1e6);
    csv.row(fmt::format("{},{},{},{:.6f},{:.1f},{:.2f}", backend, r.workload, r.tasks, r.seconds,
                        1.0 / per, per * 1e6));
  }
  std::fflush(stdout);
}

// Under mpiexec: rank 0 scheduler, rank 1 client (with --pool: both on rank 0), the other
// ranks workers (of --nthreads threads), once per transport in the same launch.
int run_tasks_on_ranks(const TasksOptions& o) {
  for (const auto& b : o.backends) mpi::parse_transport(b);  // a bad name fails before MPI starts
  mpi::MpiEnvironment env;
  const mpi::Layout layout{0, o.pool ? 0 : 1};
  if (!enough_ranks_for_cluster(env, o.pool ? "tasks --pool" : "tasks", o.pool ? 3 : 4, o.pool)) return 2;
  const bool client = env.rank() == layout.client_rank;
  CsvWriter csv(client ? o.csv : "", "backend,workload,tasks,seconds,tasks_per_s,per_task_us");
  if (client) {
    if (o.pool)
      fmt::print("scheduler and client on rank 0 (pool mode), {} worker ranks of {} thread(s)\n",
                 env.size() - 1, o.nthreads);
    else
      fmt::print("scheduler on rank 0, client on rank 1, {} worker ranks of {} thread(s)\n",
                 env.size() - 2, o.nthreads);
    print_header();
  }
  int rc = 0;
  for (const auto& backend : o.backends) {
    mpi::LaunchOptions lo;
    lo.transport = mpi::parse_transport(backend);
    lo.nthreads = o.nthreads;
    rc |= mpi::run_cluster(env, lo, layout, [&](Client& client) {
      print_results(backend, run_workloads(client, o), csv);
    });
  }
  return rc;
}

// One fresh cluster per run, with or without dashboards (each scraped, and the scheduler's
// page polled, once a second).
std::vector<Result> run_on_fresh_cluster(const std::string& backend, const TasksOptions& o,
                                         bool dashboard) {
  LocalCluster cluster(backend, o.workers, dashboard, o.scheduler);
  MetricsScraper scraper(cluster.dashboard_urls(), std::chrono::seconds(1));
  auto& client_reg = cluster.make_registry("client");
  Client client(client_reg, cluster.address);
  auto results = run_workloads(client, o);
  if (dashboard && scraper.failures() > 0)
    fmt::print(stderr, "tasks: {} scrapes answered, {} failed\n", scraper.scrapes(), scraper.failures());
  return results;
}

// --dashboard compare: repeats of (off, on) pairs, the order alternating. Prints the medians
// of each, and the median of the pairs' on/off ratios with its 95 % interval: two runs back
// to back share the machine's state, so the ratio of a pair cancels most of its drift.
void compare_dashboard(const std::string& backend, const TasksOptions& o) {
  TasksOptions once = o;
  once.repeats = 1;
  std::map<std::string, std::vector<double>> off, on, ratios;
  std::vector<Result> shape;
  CsvWriter csv(o.csv, "backend,workload,tasks,pair,off_seconds,on_seconds");
  for (int r = 0; r < o.repeats; ++r) {
    std::map<std::string, double> pair_off;
    for (int half = 0; half < 2; ++half) {
      const bool with = (half == 0) == (r % 2 == 1);
      shape = run_on_fresh_cluster(backend, once, with);
      for (const auto& res : shape) {
        (with ? on : off)[res.workload].push_back(res.seconds);
        if (!with) pair_off[res.workload] = res.seconds;
      }
    }
    for (const auto& res : shape) {
      const double off_s = pair_off[res.workload], on_s = on[res.workload].back();
      ratios[res.workload].push_back(on_s / off_s);
      csv.row(fmt::format("{},{},{},{},{:.6f},{:.6f}", backend, res.workload, res.tasks, r,
                          off_s, on_s));
    }
  }
  fmt::print("{:<8} {:<12} {:>7} {:>12} {:>12} {:>8} {:>22}\n", "backend", "workload", "tasks",
             "off s (med)", "on s (med)", "on/off", "pairs' on/off (95 %)");
  for (const auto& res : shape) {
    const double a = median(off[res.workload]), b = median(on[res.workload]);
    const auto pairs = median_interval(ratios[res.workload]);
    fmt::print("{:<8} {:<12} {:>7} {:>12.4f} {:>12.4f} {:>8.3f} {:>8.3f} [{:.3f}, {:.3f}]\n", backend,
               res.workload, res.tasks, a, b, b / a, pairs.median, pairs.low, pairs.high);
  }
  std::fflush(stdout);
}

}  // namespace

int run_tasks(const TasksOptions& o) {
  const bool mpi_wanted = std::find(o.backends.begin(), o.backends.end(), "mpi") != o.backends.end();
  if (mpi_wanted || launched_on_several_ranks()) return run_tasks_on_ranks(o);
  if (o.pool) {
    fmt::print(stderr, "taskwire-bench tasks: --pool places ranks: run it under mpiexec, e.g. "
                       "`mpiexec.mpich -n 3 taskwire-bench tasks --pool`\n");
    return 2;
  }
  if (o.dashboard == "compare") {
    for (const auto& backend : o.backends) compare_dashboard(backend, o);
    return 0;
  }
  CsvWriter csv(o.csv, "backend,workload,tasks,seconds,tasks_per_s,per_task_us");
  print_header();
  for (const auto& backend : o.backends) {
    LocalCluster cluster(backend, o.workers, o.dashboard == "on", o.scheduler);
    MetricsScraper scraper(cluster.dashboard_urls(), std::chrono::seconds(1));
    auto& client_reg = cluster.make_registry("client");
    Client client(client_reg, cluster.address);
    print_results(backend, run_workloads(client, o), csv);
  }
  return 0;
}

}  // namespace taskwire::bench
