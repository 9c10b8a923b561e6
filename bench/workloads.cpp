#include "bench/workloads.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <taskwire/client/client.hpp>
#include <taskwire/launch/mpi/launch.hpp>

#include "bench/cluster_ranks.hpp"
#include "bench/local_cluster.hpp"
#include "bench/stats.hpp"

namespace taskwire::bench {
namespace {

struct WorkloadRow {
  std::string backend, workload;
  int round = 0, cluster = 0;  // cluster: 0 for threads, else the n-th this process started
  WorkloadTiming t;
};

class WorkloadSuite {
 public:
  explicit WorkloadSuite(const WorkloadsOptions& o, bool printing)
      : o_(o),
        printing_(printing),
        csv_(printing ? o.csv : "", "backend,workload,round,cluster,scatter_s,compute_s") {
    for (const auto& name : o.workloads) workloads_.push_back(make_workload(name, o.sizes));
  }

  /// Makes the inputs, then runs each workload once on threads, untimed: the baseline is then
  /// measured on memory this process already touched (a first touch is dear here:
  /// docs/measurements.md, "The first cluster in a process").
  void prepare() {
    for (auto& w : workloads_) {
      w->prepare();
      try {
        w->run_threads();
      } catch (const std::exception& e) {
        failed(fmt::format("{} on threads (warm-up): {}", w->name(), e.what()));
      }
    }
  }

  void threads_round(int round) {
    for (auto& w : workloads_)
      run(w->name(), "threads", round, 0, [&] { return w->run_threads(); });
  }

  void cluster_round(Client& client, const std::string& backend, int round) {
    ++clusters_;
    for (auto& w : workloads_)
      run(w->name(), backend, round, clusters_, [&] { return w->run_cluster(client); });
  }

  void failed(const std::string& what) {
    all_right_ = false;
    fmt::print("  FAILED: {}\n", what);
  }
  bool all_right() const { return all_right_; }
  void report() const;

 private:
  template <class Run>
  void run(const std::string& workload, const std::string& backend, int round, int cluster, Run r) {
    try {
      WorkloadRow row{backend, workload, round, cluster, r()};
      csv_.row(fmt::format("{},{},{},{},{:.6f},{:.6f}", backend, workload, round, cluster,
                           row.t.scatter_seconds, row.t.compute_seconds));
      fmt::print(stderr, "workloads: round {} {:<7} {:<8} scatter {:7.3f} s, compute {:7.3f} s\n",
                 round, backend, workload, row.t.scatter_seconds, row.t.compute_seconds);
      rows_.push_back(std::move(row));
    } catch (const std::exception& e) {
      failed(fmt::format("{} on {} (round {}): {}", workload, backend, round, e.what()));
    }
  }
  void print_ratios() const;
  void print_clusters() const;

  const WorkloadsOptions& o_;
  bool printing_;
  CsvWriter csv_;
  std::vector<std::unique_ptr<Workload>> workloads_;
  std::vector<WorkloadRow> rows_;
  int clusters_ = 0;
  bool all_right_ = true;
};

void WorkloadSuite::report() const {
  if (!printing_) return;
  print_ratios();
  print_clusters();
  fmt::print("\nchecks:\n");
  for (const auto& w : workloads_) fmt::print("  {:<8} {}\n", w->name(), w->checked());
  std::fflush(stdout);
}

// The first cluster this process started over `backend` (0: none).
int first_cluster(const std::vector<WorkloadRow>& rows, const std::string& backend) {
  for (const auto& r : rows)
    if (r.backend == backend && r.cluster > 0) return r.cluster;
  return 0;
}

// Per workload and backend: medians, and the median over the runs of each run's compute time
// over the threads run of its round. A backend's first cluster in this process is left out
// when it ran later ones: it pays for the process's first touches of memory.
void WorkloadSuite::print_ratios() const {
  fmt::print(
      "\ncompute time, taskwire against threads in the same round (each backend's first cluster "
      "left out when it ran later ones):");
  fmt::print("\n{:<8} {:<7} {:>6} {:>12} {:>12} {:>12} {:>9} {:>15}\n", "workload", "backend",
             "runs", "threads (s)", "taskwire (s)", "scatter (s)", "ratio", "ratio range");
  for (const auto& w : workloads_) {
    std::map<int, double> threads;
    for (const auto& r : rows_)
      if (r.workload == w->name() && r.backend == "threads") threads[r.round] = r.t.compute_seconds;
    if (threads.empty()) continue;
    std::vector<double> all_threads;
    for (const auto& [round, s] : threads) all_threads.push_back(s);
    for (const auto& b : o_.backends) {
      std::vector<double> compute, scatter, ratio;
      const int first = first_cluster(rows_, b);
      const bool later = std::any_of(rows_.begin(), rows_.end(), [&](const WorkloadRow& r) {
        return r.workload == w->name() && r.backend == b && r.cluster > first;
      });
      for (const auto& r : rows_)
        if (r.workload == w->name() && r.backend == b && threads.count(r.round) &&
            (!later || r.cluster != first)) {
          compute.push_back(r.t.compute_seconds);
          scatter.push_back(r.t.scatter_seconds);
          ratio.push_back(r.t.compute_seconds / threads.at(r.round));
        }
      if (ratio.empty()) continue;
      const auto [lo, hi] = std::minmax_element(ratio.begin(), ratio.end());
      fmt::print("{:<8} {:<7} {:>6} {:>12.3f} {:>12.3f} {:>12.3f} {:>8.2f}x {:>7.2f}-{:.2f}x{}\n",
                 w->name(), b, ratio.size(), median(all_threads), median(compute), median(scatter),
                 median(ratio), *lo, *hi, later ? "" : "  (its first cluster only)");
    }
  }
}

// Every cluster by its place in this process, and per backend its first against its second.
void WorkloadSuite::print_clusters() const {
  std::map<int, std::string> backend_of;
  std::map<std::pair<int, std::string>, WorkloadTiming> at;
  for (const auto& r : rows_)
    if (r.cluster > 0) backend_of[r.cluster] = r.backend, at[{r.cluster, r.workload}] = r.t;
  if (backend_of.size() < 2) return;
  fmt::print(
      "\nclusters in the order this process started them (scatter + compute, s):\n{:<8} {:<7}",
      "cluster", "backend");
  for (const auto& w : workloads_) fmt::print(" {:>20}", w->name());
  fmt::print("\n");
  const auto cell = [](double a, double b, const char* unit) {
    return fmt::format(" {:>20}", fmt::format("{:.3f}{} + {:.3f}{}", a, unit, b, unit));
  };
  for (const auto& [c, b] : backend_of) {
    fmt::print("{:<8} {:<7}", c, b);
    for (const auto& w : workloads_) {
      const auto it = at.find({c, w->name()});
      fmt::print("{}", it == at.end()
                           ? fmt::format(" {:>20}", "-")
                           : cell(it->second.scatter_seconds, it->second.compute_seconds, ""));
    }
    fmt::print("\n");
  }
  for (const auto& b : o_.backends) {
    const int first = first_cluster(rows_, b);
    int second = 0;
    for (const auto& [c, cb] : backend_of)
      if (cb == b && c > first && second == 0) second = c;
    if (second == 0) continue;
    fmt::print("{:<16}", fmt::format("{} 1st / 2nd", b));
    for (const auto& w : workloads_) {
      const auto x = at.find({first, w->name()}), y = at.find({second, w->name()});
      fmt::print("{}", x == at.end() || y == at.end()
                           ? fmt::format(" {:>20}", "-")
                           : cell(x->second.scatter_seconds / y->second.scatter_seconds,
                                  x->second.compute_seconds / y->second.compute_seconds, "x"));
    }
    fmt::print("\n");
  }
}

void print_workloads_header(const WorkloadsOptions& o, int workers) {
  const auto& s = o.sizes;
  fmt::print(
      "workloads: {} workers x 1 thread against {} threads in one process, {} round(s) of {} "
      "cluster(s) per backend\n  cholesky N={} in {}x{} tiles of {}; kmeans {} in {} chunks, "
      "k={}, {} dims, {} iterations; sort {} int64 in {} parts\n",
      workers, s.threads, o.repeats, o.clusters, s.chol_tiles * s.chol_tile, s.chol_tiles,
      s.chol_tiles, s.chol_tile, human_bytes(s.kmeans_bytes), s.kmeans_chunks, s.kmeans_k,
      s.kmeans_dims, s.kmeans_iterations, s.sort_keys, s.sort_parts);
  std::fflush(stdout);
}

// What this process used (getrusage), holds (VmRSS) and held at most (VmHWM: since the last
// reset_peak()), for --rank-usage.
struct RankUsage {
  double wall = 0, user = 0, system = 0;
  long minor_faults = 0, major_faults = 0, rss_kib = 0, peak_kib = 0;
  static RankUsage now() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const auto secs = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    };
    RankUsage u{seconds_since(std::chrono::steady_clock::time_point{}),
                secs(ru.ru_utime),
                secs(ru.ru_stime),
                ru.ru_minflt,
                ru.ru_majflt,
                0,
                0};
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmRSS:", 0) == 0) u.rss_kib = std::stol(line.substr(6));
      if (line.rfind("VmHWM:", 0) == 0) u.peak_kib = std::stol(line.substr(6));
    }
    return u;
  }
  /// now(), with VmHWM set back to the current RSS first (Linux's clear_refs "5"), so that
  /// the next now() gives the peak of what ran in between (without that file, the process's).
  static RankUsage start() {
    std::ofstream("/proc/self/clear_refs") << "5";
    return now();
  }
};

void print_rank_usage(int rank, const std::string& what, const RankUsage& a, const RankUsage& b) {
  fmt::print(stderr,
             "rank-usage: rank {} {:<14} wall {:6.3f} s, user {:6.3f} s, system {:6.3f} s, "
             "minor faults {:8}, major {:3}, RSS {:7} -> {:7} KiB, peak {:7} KiB "
             "(monotonic {:.3f}-{:.3f})\n",
             rank, what, b.wall - a.wall, b.user - a.user, b.system - a.system,
             b.minor_faults - a.minor_faults, b.major_faults - a.major_faults, a.rss_kib, b.rss_kib,
             b.peak_kib, a.wall, b.wall);
}

// Allocates `mib` MiB in 8 MiB blocks, touches every page and frees them: the allocator keeps
// the pages (until its decay), so what this process allocates next starts on faulted-in memory.
void prefault_pages(std::size_t mib) {
  std::vector<std::unique_ptr<char[]>> blocks;
  for (std::size_t m = 0; m < mib; m += 8) {
    blocks.emplace_back(new char[std::size_t{8} << 20]);
    std::memset(blocks.back().get(), 1, std::size_t{8} << 20);
    asm volatile("" : : "r"(blocks.back().get()) : "memory");  // the stores must happen
  }
}

int run_workloads_on_ranks(const WorkloadsOptions& o) {
  for (const auto& b : o.backends) mpi::parse_transport(b);
  mpi::MpiEnvironment env;
  if (!enough_ranks_for_cluster(env, "workloads", 4)) return 2;
  const mpi::Layout layout{0, 1};
  const bool client = env.rank() == layout.client_rank;
  WorkloadSuite suite(o, client);
  if (client) {
    print_workloads_header(o, env.size() - 2);
    suite.prepare();
  }
  if (o.prefault_mib > 0) {
    const RankUsage before = RankUsage::start();
    prefault_pages(o.prefault_mib);
    if (o.rank_usage) print_rank_usage(env.rank(), "prefault", before, RankUsage::now());
  }
  int rc = 0;
  for (int round = 1; round <= o.repeats; ++round) {
    const RankUsage before = RankUsage::start();
    if (client) suite.threads_round(round);
    if (o.rank_usage && client)
      print_rank_usage(env.rank(), fmt::format("threads round {}", round), before,
                       RankUsage::now());
    env.barrier();  // the other ranks wait (polled, sleeping) while the threads run
    for (const auto& backend : o.backends)
      for (int c = 0; c < o.clusters; ++c) {
        mpi::LaunchOptions lo;
        lo.transport = mpi::parse_transport(backend);
        const RankUsage before = RankUsage::start();
        const int status = mpi::run_cluster(
            env, lo, layout, [&](Client& cl) { suite.cluster_round(cl, backend, round); });
        if (o.rank_usage)
          print_rank_usage(env.rank(), fmt::format("{} round {}", backend, round), before,
                           RankUsage::now());
        if (status != 0 && client)
          suite.failed(fmt::format("the {} cluster ended with status {}", backend, status));
        rc |= status;
      }
  }
  suite.report();
  return suite.all_right() && rc == 0 ? 0 : 1;
}

}  // namespace

int run_workloads(const WorkloadsOptions& o) {
  const bool mpi_wanted =
      std::find(o.backends.begin(), o.backends.end(), "mpi") != o.backends.end();
  if (mpi_wanted || launched_on_several_ranks()) return run_workloads_on_ranks(o);
  WorkloadSuite suite(o, true);
  print_workloads_header(o, o.workers);
  suite.prepare();
  for (int round = 1; round <= o.repeats; ++round) {
    suite.threads_round(round);
    for (const auto& backend : o.backends)
      for (int c = 0; c < o.clusters; ++c) {
        LocalCluster cluster(backend, o.workers);
        Client client(cluster.make_registry("client"), cluster.address);
        suite.cluster_round(client, backend, round);
      }
  }
  suite.report();
  return suite.all_right() ? 0 : 1;
}

}  // namespace taskwire::bench
