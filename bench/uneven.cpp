#include "bench/uneven.hpp"

#include "bench/local_cluster.hpp"
#include "bench/splitmix.hpp"
#include "bench/stats.hpp"

#include <taskwire/client/client.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>

namespace taskwire::bench {

using Clock = std::chrono::steady_clock;


/// Sleeps `seconds`; returns how long it took, as the worker saw it.
double uneven_sleep(double seconds) {
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return seconds_since(t0);
}

/// Keeps a core busy for `seconds`; returns how long it took.
double uneven_spin(double seconds) {
  const auto t0 = Clock::now();
  while (seconds_since(t0) < seconds) {
  }
  return seconds_since(t0);
}

}  // namespace taskwire::bench

TASKWIRE_REGISTER(taskwire::bench::uneven_sleep);
TASKWIRE_REGISTER(taskwire::bench::uneven_spin);

namespace taskwire::bench {
namespace {

/// Lognormal durations in seconds (Box-Muller over splitmix64: the same on every platform).
std::vector<double> lognormal_durations(const UnevenOptions& o) {
  std::uint64_t state = o.seed;
  auto uniform = [&] { return (static_cast<double>(splitmix64(state) >> 11) + 0.5) * 0x1.0p-53; };
  const double mu = std::log(o.median_ms / 1000.0);
  std::vector<double> out(static_cast<std::size_t>(o.tasks));
  for (auto& d : out) {
    const double radius = std::sqrt(-2.0 * std::log(uniform()));
    const double normal = radius * std::cos(2.0 * std::numbers::pi * uniform());
    d = std::exp(mu + o.sigma * normal);
  }
  return out;
}

struct Run {
  double makespan = 0;  ///< submit to the last result
  double others = 0;    ///< submit to the last result of the tasks other than the stuck one
  double measured = 0;  ///< the durations the tasks measured themselves, summed
};

Run run_once(Client& client, const UnevenOptions& o, const std::vector<double>& durations) {
  auto* work = o.work == "spin" ? uneven_spin : uneven_sleep;
  const auto t0 = Clock::now();
  std::optional<Future<double>> stuck;
  if (o.stuck_seconds > 0) stuck = client.submit(work, o.stuck_seconds);
  auto futures = client.map(work, durations);
  const auto measured = client.gather(futures);
  Run run{0, seconds_since(t0), 0};
  run.measured = std::accumulate(measured.begin(), measured.end(), 0.0);
  if (stuck) run.measured += stuck->get();
  run.makespan = seconds_since(t0);
  return run;
}

struct Bounds {
  double all = 0;     ///< max(total work / threads, longest task)
  double others = 0;  ///< for the others, one worker held by the stuck task throughout
  double longest = 0;
};

Bounds bounds_of(const UnevenOptions& o, const std::vector<double>& durations) {
  const double total = std::accumulate(durations.begin(), durations.end(), 0.0);
  const double longest = *std::max_element(durations.begin(), durations.end());
  Bounds b;
  b.longest = std::max(longest, o.stuck_seconds);
  b.all = std::max((total + o.stuck_seconds) / o.workers, b.longest);
  const int others_threads = o.stuck_seconds > 0 && o.workers > 1 ? o.workers - 1 : o.workers;
  b.others = std::max(total / others_threads, longest);
  return b;
}

}  // namespace

int run_uneven(const UnevenOptions& o) {
  const auto durations = lognormal_durations(o);
  const double total = std::accumulate(durations.begin(), durations.end(), 0.0);
  const Bounds bound = bounds_of(o, durations);
  fmt::print("{} tasks, lognormal median {} ms sigma {} (seed {}): total {:.3f} s, longest "
             "{:.1f} ms; {} single-thread workers, tasks {}; bound max(total/threads, longest) "
             "{:.3f} s\n",
             o.tasks, o.median_ms, o.sigma, o.seed, total, bound.longest * 1e3, o.workers,
             o.work == "spin" ? "spin" : "sleep", bound.all);
  if (o.stuck_seconds > 0)
    fmt::print("plus one task of {} s submitted first; the others' bound, with one worker "
               "held by it: {:.3f} s\n",
               o.stuck_seconds, bound.others);
  fmt::print("{:<8} {:<9} {:>11} {:>8} {:>16} {:>16} {:>9} {:>9}\n", "backend", "stealing",
             "makespan s", "/bound", "measured work s", "/(measured/thr)", "others s",
             "/bound");
  CsvWriter csv(o.csv, "backend,tasks,workers,work,seed,bound_s,makespan_s,ratio,"
                       "measured_work_s,stealing,others_s");
  for (const auto& backend : o.backends) {
    for (const bool stealing : {false, true}) {
      LocalCluster cluster(backend, o.workers, false, {.work_stealing = stealing});
      Client client(cluster.make_registry("client"), cluster.address);
      client.submit(uneven_sleep, 0.0).get();  // warm up connections between every component
      std::vector<double> makespans, measured, others;
      for (int r = 0; r < o.repeats; ++r) {
        const Run run = run_once(client, o, durations);
        makespans.push_back(run.makespan);
        measured.push_back(run.measured);
        others.push_back(run.others);
      }
      const double makespan = median(makespans), work = median(measured);
      const double others_done = median(others);
      fmt::print("{:<8} {:<9} {:>11.3f} {:>8.3f} {:>16.3f} {:>16.3f} {:>9.3f} {:>9.3f}\n",
                 backend, stealing ? "on" : "off", makespan, makespan / bound.all, work,
                 makespan / std::max(work / o.workers, bound.longest), others_done,
                 others_done / bound.others);
      csv.row(fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.4f},{:.6f},{},{:.6f}", backend,
                          o.tasks, o.workers, o.work, o.seed, bound.all, makespan,
                          makespan / bound.all, work, stealing ? "on" : "off", others_done));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace taskwire::bench
