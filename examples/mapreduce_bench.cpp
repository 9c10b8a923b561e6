// Map/reduce graph throughput on a scheduler and 2 single-thread workers in this process:
//   baseline  10 000 no-op tasks through Client::map + gather (no graph layer)
//   map       10 000 no-op inputs through graph::execute, chunksize 1 and 64
//   reduce    a 10 000-leaf map plus a binary tree reduce of ints, in the pool and on the client,
//             and with chunksize 64 (a tree over 157 chunks)
// Medians of --repeats runs; ratios are against the baseline of the same run.
//
//   ./mapreduce_bench [--tasks N] [--repeats N] [--scheme tcp|inproc] [--csv FILE]
#include "examples/mapreduce_cluster.hpp"

#include <taskwire/graph/execute.hpp>
#include <taskwire/runtime/log.hpp>

#include <fmt/format.h>
#include <fmt/os.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace mapreduce_bench {
int noop(int x) { return x; }
int add(std::vector<int> xs) { return std::accumulate(xs.begin(), xs.end(), 0); }
}  // namespace mapreduce_bench

TASKWIRE_REGISTER(mapreduce_bench::noop);
TASKWIRE_REGISTER(mapreduce_bench::add);

namespace {

double median_seconds(int repeats, const std::function<void()>& run) {
  std::vector<double> s;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mapreduce_bench;
  namespace graph = taskwire::graph;
  int tasks = 10'000, repeats = 5;
  std::string scheme = "tcp", csv_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--tasks") tasks = std::atoi(argv[i + 1]);
    else if (flag == "--repeats") repeats = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--scheme") scheme = argv[i + 1];
    else if (flag == "--csv") csv_path = argv[i + 1];
    else return fmt::print(stderr, "unknown option {}\n", flag), 2;
  }
  taskwire::runtime::init_logging({"warn", "", -1});
  mapreduce::InProcessCluster cluster(scheme == "tcp" ? "tcp://127.0.0.1:0" : "inproc://auto", 2);
  auto& client = cluster.client();
  std::vector<int> inputs(static_cast<std::size_t>(tasks));
  std::iota(inputs.begin(), inputs.end(), 0);
  const int expected_sum = std::accumulate(inputs.begin(), inputs.end(), 0);
  auto check = [](bool ok, const char* what) {
    if (!ok) throw std::runtime_error(fmt::format("wrong result: {}", what));
  };
  client.submit(noop, 0).get();  // connections warm

  struct Row {
    std::string workload;
    double seconds;
  };
  std::vector<Row> rows;
  rows.push_back({"baseline client.map", median_seconds(repeats, [&] {
                    check(client.gather(client.map(noop, inputs)) == inputs, "baseline");
                  })});
  for (std::size_t chunksize : {1, 64}) {
    rows.push_back({fmt::format("map chunksize {}", chunksize), median_seconds(repeats, [&] {
                      check(graph::execute(graph::map(noop, inputs), client,
                                           {.chunksize = chunksize}) == inputs, "map");
                    })});
  }
  const auto tree = graph::reduce(graph::map(noop, inputs), add);
  rows.push_back({"map+tree in pool", median_seconds(repeats, [&] {
                    check(graph::execute(tree, client) == expected_sum, "tree in pool");
                  })});
  rows.push_back({"map+tree on client", median_seconds(repeats, [&] {
                    check(graph::execute(tree, client, {.reduce_in_pool = false}) == expected_sum,
                          "tree on client");
                  })});
  rows.push_back({"map+tree chunksize 64", median_seconds(repeats, [&] {
                    check(graph::execute(tree, client, {.chunksize = 64}) == expected_sum,
                          "tree chunked");
                  })});

  const double baseline = rows.front().seconds;
  fmt::print("{} scheme, 2 single-thread workers, {} inputs, median of {}\n", scheme, tasks, repeats);
  fmt::print("{:<22} {:>10} {:>12} {:>18}\n", "workload", "seconds", "inputs/s", "vs baseline");
  std::string csv = "scheme,workload,inputs,seconds,inputs_per_s,speed_vs_baseline\n";
  for (const auto& r : rows) {
    const double rate = tasks / r.seconds, ratio = baseline / r.seconds;
    fmt::print("{:<22} {:>10.4f} {:>12.0f} {:>17.2f}x\n", r.workload, r.seconds, rate, ratio);
    csv += fmt::format("{},{},{},{:.6f},{:.1f},{:.3f}\n", scheme, r.workload, tasks, r.seconds, rate,
                       ratio);
  }
  fmt::print("(map+tree at chunksize 1 runs {} map tasks and {} combine calls per run)\n", tasks,
             tasks - 1);
  if (!csv_path.empty()) fmt::output_file(csv_path).print("{}", csv);
  return 0;
}
