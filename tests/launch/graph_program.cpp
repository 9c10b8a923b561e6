// Map/reduce graphs on a cluster launched under mpiexec (tests/launch): the same graphs as
// tests/graph, in the static pool (rank 0 runs this program with the scheduler in its own
// process, the other ranks compute) and with initialize (scheduler, program, workers).
//   graph_program pool|initialize mpi|tcp     checks; prints CHECKED/FAILED lines
//   graph_program bench mpi|tcp               pool mode figures (not a test)
#include "tests/launch/checks.hpp"

#include <taskwire/mpi.hpp>
#include <taskwire/graph/execute.hpp>

#include <fmt/format.h>

#include <chrono>
#include <numeric>
#include <thread>

namespace graph_fns {
long square(long x) { return x * x; }
long sum(std::vector<long> xs) { return std::accumulate(xs.begin(), xs.end(), 0L); }
long uneven(long x) {  // every 7th input takes much longer
  std::this_thread::sleep_for(std::chrono::milliseconds(x % 7 == 0 ? 30 : 1));
  return x;
}
long noop(long x) { return x; }
}  // namespace graph_fns

TASKWIRE_REGISTER(graph_fns::square);
TASKWIRE_REGISTER(graph_fns::sum);
TASKWIRE_REGISTER(graph_fns::uneven);
TASKWIRE_REGISTER(graph_fns::noop);

namespace {

using namespace taskwire;
using launch_checks::check;
using launch_checks::failures;

std::vector<long> iota(long n) {
  std::vector<long> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0L);
  return v;
}

void checks(Client& client, const std::string& label) {
  const auto xs = iota(1000);
  long expected = 0;
  for (long x : xs) expected += x * x;  // the sequential reduction

  auto squares = graph::execute(graph::map(graph_fns::square, xs), client);
  bool ordered = squares.size() == xs.size();
  for (std::size_t i = 0; ordered && i < xs.size(); ++i) ordered = squares[i] == xs[i] * xs[i];
  check(ordered, label + ": map results in input order");

  for (auto mode : {graph::ReduceMode::single_node, graph::ReduceMode::tree, graph::ReduceMode::tree_n}) {
    for (bool in_pool : {true, false}) {
      for (std::size_t chunk : {std::size_t{1}, std::size_t{16}}) {
        graph::ReduceOptions<long> ro;
        ro.mode = mode;
        ro.n_batch = 3;
        graph::ExecuteOptions eo;
        eo.reduce_in_pool = in_pool;
        eo.chunksize = chunk;
        const long got = graph::execute(
            graph::reduce(graph::map(graph_fns::square, xs), graph_fns::sum, ro), client, eo);
        check(got == expected, fmt::format("{}: reduce {} {} chunksize {}", label,
                                           graph::to_string(mode),
                                           in_pool ? "in the pool" : "on the client", chunk));
      }
    }
  }
  const auto ys = iota(140);
  graph::ExecuteOptions with_progress;
  with_progress.progress.bar = true;  // lines on stderr, no terminal under mpiexec (CMakeLists)
  const long uneven = graph::execute(
      graph::reduce(graph::map(graph_fns::uneven, ys), graph_fns::sum), client, with_progress);
  check(uneven == 139L * 140 / 2, label + ": tasks of uneven duration");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The figures: a 10 000-leaf map with a binary tree reduce, and 10 000 no-op map
// tasks at chunksize 1 and 64 (median of 3 each).
void bench(Client& client, const std::string& label, int ranks) {
  const auto xs = iota(10'000);
  auto median = [](auto run) {
    std::vector<double> t;
    for (int i = 0; i < 3; ++i) t.push_back(run());
    std::sort(t.begin(), t.end());
    return t[1];
  };
  auto tree = [&](std::size_t chunk) {
    graph::ExecuteOptions eo;
    eo.chunksize = chunk;
    return median([&] {
      auto t0 = std::chrono::steady_clock::now();
      graph::execute(graph::reduce(graph::map(graph_fns::noop, xs), graph_fns::sum), client, eo);
      return seconds_since(t0);
    });
  };
  auto map_rate = [&](std::size_t chunk) {
    graph::ExecuteOptions eo;
    eo.chunksize = chunk;
    return 10'000 / median([&] {
             auto t0 = std::chrono::steady_clock::now();
             graph::execute(graph::map(graph_fns::noop, xs), client, eo);
             return seconds_since(t0);
           });
  };
  const double c1 = map_rate(1), c64 = map_rate(64);
  fmt::print("{}, {} ranks: 10000-leaf map + binary tree reduce {:.3f} s at chunksize 1, "
             "{:.3f} s at chunksize 64; no-op map {:.0f} tasks/s at chunksize 1, {:.0f} at "
             "chunksize 64 ({:.1f}x)\n",
             label, ranks, tree(1), tree(64), c1, c64, c64 / c1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "pool";
  mpi::LaunchOptions options;
  options.transport = mpi::parse_transport(argc > 2 ? argv[2] : "mpi");
  const auto label = fmt::format("{} over {}", mode, argc > 2 ? argv[2] : "mpi");
  try {
    auto session = mode == "initialize" ? mpi::initialize(argc, argv, options)
                                        : mpi::initialize_pool(argc, argv, options);
    if (mode == "bench") bench(session.client(), label, session.size());
    else checks(session.client(), label);
    session.shutdown();
    fmt::print("rank {}: done, {} failures\n", session.rank(), failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "graph_program: {}\n", e.what());
    return 1;
  }
}
