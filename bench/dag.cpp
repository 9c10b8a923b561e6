#include "bench/dag.hpp"

#include "bench/cluster_ranks.hpp"
#include "bench/stats.hpp"

#include <taskwire/launch/mpi/launch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <tuple>

namespace taskwire::bench {
namespace {

using Clock = std::chrono::steady_clock;
using RowKey = std::tuple<std::string, std::string, std::size_t>;  // backend, workload, bytes

void validate(const DagOptions& o) {
  for (const auto& w : o.workloads) {
    const auto& all = dag_workloads();
    if (std::none_of(all.begin(), all.end(), [&](const DagWorkload& d) { return d.name == w; }))
      throw std::invalid_argument("unknown workload '" + w + "' (stencil, matmul, tree, shuffle)");
  }
  if (o.repeats < 1 || o.sizes.empty()) throw std::invalid_argument("--repeats and --sizes need at least one");
  const auto& s = o.shape;
  if (s.stencil_width < 1 || s.stencil_steps < 0 || s.matmul_blocks < 1 || s.matmul_inner < 1 ||
      s.tree_leaves < 1)
    throw std::invalid_argument("graph shapes must be positive");
}

int tasks_of(const std::string& workload, const DagShape& shape) {
  for (const auto& d : dag_workloads())
    if (d.name == workload) return d.tasks(shape);
  return 0;
}

// One round on one cluster: a warm-up of every workload at the smallest size (connections
// between workers are made then), then every workload at every size, timed and checked.
struct Round {
  const DagOptions& o;
  const std::string& backend;
  std::map<RowKey, std::vector<double>>& times;
  std::map<std::pair<std::string, std::size_t>, double>& expected;
  bool& all_right;

  void operator()(Client& client) {
    for (const auto& w : o.workloads) run_in_cluster(client, w, o.sizes.front(), o.shape);
    for (const auto& w : o.workloads)
      for (std::size_t bytes : o.sizes) {
        const auto key = std::make_pair(w, bytes);
        if (o.check && !expected.count(key)) expected[key] = run_directly(w, bytes, o.shape);
        const auto t0 = Clock::now();
        const double result = run_in_cluster(client, w, bytes, o.shape);
        times[{backend, w, bytes}].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        if (o.check && result != expected[key]) {
          all_right = false;
          fmt::print("  WRONG: {} {} at {} gave {:.17g}, the direct computation {:.17g}\n", backend,
                     w, human_bytes(bytes), result, expected[key]);
        }
      }
  }
};

void print_table(const DagOptions& o, const std::map<RowKey, std::vector<double>>& times) {
  CsvWriter csv(o.csv, "backend,workload,bytes,tasks,seconds");
  const bool both = std::count(o.backends.begin(), o.backends.end(), "mpi") &&
                    std::count(o.backends.begin(), o.backends.end(), "tcp");
  fmt::print("\n{:<8} {:>9} {:>6}", "workload", "bytes", "tasks");
  for (const auto& b : o.backends) fmt::print(" {:>10}", b + " (ms)");
  if (both) fmt::print(" {:>9}", "mpi/tcp");
  fmt::print("\n");
  int rows = 0, mpi_not_slower = 0;
  for (const auto& w : o.workloads)
    for (std::size_t bytes : o.sizes) {
      const int tasks = tasks_of(w, o.shape);
      const std::size_t moved = payload_bytes(w, bytes);
      fmt::print("{:<8} {:>9} {:>6}", w, human_bytes(bytes), tasks);
      std::map<std::string, double> p50;
      for (const auto& b : o.backends) {
        p50[b] = summarize(times.at({b, w, bytes})).p50;
        fmt::print(" {:>10.2f}", p50[b] * 1e3);
        csv.row(fmt::format("{},{},{},{},{:.6f}", b, w, moved, tasks, p50[b]));
      }
      if (both) {
        const double ratio = p50["mpi"] / p50["tcp"];
        ++rows;
        if (ratio <= 1.0) ++mpi_not_slower;
        fmt::print(" {:>8.2f}x", ratio);
      }
      fmt::print("\n");
    }
  if (both)
    fmt::print("MPI median <= TCP median in {} of {} rows (medians of {} rounds)\n", mpi_not_slower,
               rows, o.repeats);
}

}  // namespace

int run_dag(const DagOptions& o) {
  validate(o);
  mpi::MpiEnvironment env;
  if (!enough_ranks_for_cluster(env, "dag", 4)) return 2;
  const bool client_rank = env.rank() == 1;
  std::map<RowKey, std::vector<double>> times;
  std::map<std::pair<std::string, std::size_t>, double> expected;
  bool all_right = true;
  if (client_rank) {
    fmt::print("task graphs that move data: {} workers x {} thread(s), {} rounds, transports "
               "alternated each round{}\n",
               env.size() - 2, o.nthreads, o.repeats,
               o.check ? ", every result checked against a direct computation" : "");
    std::fflush(stdout);
  }
  for (int round = 0; round < o.repeats; ++round)
    for (const auto& backend : o.backends) {
      mpi::LaunchOptions lo;
      lo.transport = mpi::parse_transport(backend);
      lo.nthreads = o.nthreads;
      const auto t0 = Clock::now();
      const int rc = mpi::run_cluster(env, lo, mpi::Layout{0, 1},
                                      Round{o, backend, times, expected, all_right});
      if (rc != 0) all_right = false;
      if (client_rank) {
        fmt::print(stderr, "dag: round {}/{} over {} done in {:.1f} s\n", round + 1, o.repeats,
                   backend, std::chrono::duration<double>(Clock::now() - t0).count());
        if (rc != 0) fmt::print(stderr, "dag: the {} cluster ended with status {}\n", backend, rc);
      }
    }
  if (client_rank && all_right) print_table(o, times);
  return all_right ? 0 : 1;
}

}  // namespace taskwire::bench
