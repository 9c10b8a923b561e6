// graph::map / graph::reduce / graph::execute against a scheduler and workers in this process,
// over the scheme given by --scheme (inproc, tcp).
#include "tests/comm/fixture.hpp"
#include "tests/graph/child_process.hpp"
#include "tests/graph/graph_functions.hpp"

#include <taskwire/graph/execute.hpp>
#include <taskwire/runtime/force_exit.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <numeric>
#include <thread>

using namespace taskwire;
using namespace std::chrono_literals;
using graph::ReduceMode;

namespace {

// A scheduler and `nworkers` single-thread workers on the selected scheme, and a client.
struct GraphCluster {
  test::SchemeFixture& fx = test::fixture();
  std::unique_ptr<scheduler::SchedulerServer> scheduler;
  std::vector<std::unique_ptr<worker::Worker>> workers;
  std::unique_ptr<Client> client;

  explicit GraphCluster(int nworkers = 2) {
    scheduler::SchedulerServerOptions options;
    options.listen = {fx.listen_address()};
    scheduler = std::make_unique<scheduler::SchedulerServer>(fx.registry(), options);
    scheduler->start();
    const auto address = scheduler->addresses().at(0);
    for (int i = 0; i < nworkers; ++i) {
      worker::WorkerOptions o;
      o.scheduler_address = address;
      o.nthreads = 1;
      o.name = "graph-w" + std::to_string(i);
      workers.push_back(std::make_unique<worker::Worker>(fx.context(), fx.registry(), o));
      workers.back()->start();
    }
    for (int i = 0; i < 500 && registered_workers() < static_cast<std::size_t>(nworkers); ++i)
      std::this_thread::sleep_for(20ms);
    REQUIRE(registered_workers() == static_cast<std::size_t>(nworkers));
    client = std::make_unique<Client>(fx.registry(), address);
  }
  ~GraphCluster() {
    client.reset();
    for (auto& w : workers) w->stop();
    scheduler->stop();
  }
  std::size_t registered_workers() {
    return scheduler->inspect([](const scheduler::SchedulerState& s) { return s.workers().size(); });
  }
};

std::vector<int> iota(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::string tags(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += graph_fns::tag(i);
  return s;
}

}  // namespace

TEST_CASE("graph: map results come back in input order, with and without chunks", "[graph]") {
  GraphCluster cl;
  for (std::size_t chunksize : {1, 3, 64}) {
    INFO("chunksize " << chunksize);
    auto out = graph::execute(graph::map(graph_fns::square, iota(200)), *cl.client,
                              {.chunksize = chunksize});
    REQUIRE(out.size() == 200);
    for (int i = 0; i < 200; ++i) CHECK(out[static_cast<std::size_t>(i)] == i * i);
  }
  // Inputs convert to the parameter type; an empty map is an empty result.
  CHECK(graph::execute(graph::map(graph_fns::tag, std::vector<short>{4, 5}), *cl.client) ==
        std::vector<std::string>{"4,", "5,"});
  CHECK(graph::execute(graph::map(graph_fns::square, std::vector<int>{}), *cl.client).empty());
}

TEST_CASE("graph: every reduce mode equals a sequential reduction, in the pool and on the client",
          "[graph]") {
  GraphCluster cl;
  for (int n : {1, 2, 3, 7, 16, 101}) {
    for (auto mode : {ReduceMode::single_node, ReduceMode::tree, ReduceMode::tree_n}) {
      for (std::size_t n_batch : {2, 3, 5}) {
        for (std::size_t chunksize : {1, 4}) {
          for (bool in_pool : {true, false}) {
            INFO("n " << n << " mode " << graph::to_string(mode) << " n_batch " << n_batch
                      << " chunksize " << chunksize << " in pool " << in_pool);
            const graph::ExecuteOptions eo{.chunksize = chunksize, .reduce_in_pool = in_pool};
            auto g = graph::reduce(graph::map(graph_fns::tag, iota(n)), graph_fns::concat,
                                   {.mode = mode, .n_batch = n_batch});
            CHECK(graph::execute(g, *cl.client, eo) == tags(n));
          }
        }
      }
    }
  }
  auto squares = graph::reduce(graph::map(graph_fns::widen_square, iota(1000)), graph_fns::sum);
  CHECK(graph::execute(squares, *cl.client) == 999L * 1000 * 1999 / 6);
}

TEST_CASE("graph: map and reduce over futures run on the data already in the cluster",
          "[graph][futures]") {
  GraphCluster cl;
  auto parts = cl.client->scatter_each(iota(40));
  auto squares = graph::execute(graph::map(graph_fns::widen_square, parts), *cl.client);
  REQUIRE(squares.size() == 40);
  for (int i = 0; i < 40; ++i) CHECK(squares[static_cast<std::size_t>(i)] == long{i} * i);
  for (auto mode : {ReduceMode::single_node, ReduceMode::tree, ReduceMode::tree_n}) {
    for (bool in_pool : {true, false}) {
      for (std::size_t fuse : {1, 3}) {
        INFO("mode " << graph::to_string(mode) << " in pool " << in_pool << " fuse " << fuse);
        auto g = graph::reduce(graph::map(graph_fns::tag, cl.client->scatter_each(iota(13))),
                               graph_fns::concat, {.mode = mode, .n_batch = 3});
        CHECK(graph::execute(g, *cl.client, {.reduce_in_pool = in_pool, .reduce_fuse_levels = fuse}) ==
              tags(13));
      }
    }
  }
  // The inputs stay the caller's: a second graph over the same futures reads them again.
  auto total = graph::reduce(graph::map(graph_fns::widen_square, parts), graph_fns::sum);
  CHECK(graph::execute(total, *cl.client) == 39L * 40 * 79 / 6);
  CHECK(graph::execute(total, *cl.client) == 39L * 40 * 79 / 6);
  // Chunks would gather data from several workers into one task: refused.
  CHECK_THROWS_WITH(graph::execute(total, *cl.client, {.chunksize = 4}),
                    Catch::Contains("chunksize must be 1"));
}

TEST_CASE("graph: fused reduce tasks make the same combine calls in the same order",
          "[graph]") {
  GraphCluster cl;
  for (int n : {2, 9, 100}) {
    for (auto mode : {ReduceMode::tree, ReduceMode::tree_n}) {
      for (std::size_t levels : {1, 2, 3, 5}) {
        for (std::size_t chunksize : {1, 3}) {
          INFO("n " << n << " mode " << graph::to_string(mode) << " levels " << levels
                    << " chunksize " << chunksize);
          auto g = graph::reduce(graph::map(graph_fns::tag, iota(n)), graph_fns::concat,
                                 {.mode = mode, .n_batch = 3});
          graph_fns::reset_concat_threads();
          CHECK(graph::execute(g, *cl.client,
                               {.chunksize = chunksize, .reduce_fuse_levels = levels}) == tags(n));
          const auto calls = graph_fns::concat_threads().size();
          graph_fns::reset_concat_threads();
          CHECK(graph::execute(g, *cl.client,
                               {.chunksize = chunksize, .reduce_in_pool = false}) == tags(n));
          CHECK(calls == graph_fns::concat_threads().size());  // as many calls as the plan's
        }
      }
    }
  }
  auto with_param = graph::reduce(graph::map(graph_fns::tag, iota(20)), graph_fns::join_with,
                                  std::string("|"));
  std::string expected;
  for (int i = 0; i < 20; ++i) {
    if (i) expected += "|";
    expected += graph_fns::tag(i);
  }
  CHECK(graph::execute(with_param, *cl.client, {.reduce_fuse_levels = 4}) == expected);
  CHECK_THROWS_WITH(graph::execute(with_param, *cl.client, {.reduce_fuse_levels = 0}),
                    Catch::Contains("reduce_fuse_levels"));
}

TEST_CASE("graph: reduce parameters and the initial value reach combine", "[graph]") {
  GraphCluster cl;
  for (bool in_pool : {true, false}) {
    for (std::size_t chunksize : {1, 2}) {
      INFO("in pool " << in_pool << " chunksize " << chunksize);
      const graph::ExecuteOptions eo{.chunksize = chunksize, .reduce_in_pool = in_pool};
      auto joined = graph::reduce(graph::map(graph_fns::tag, iota(5)), graph_fns::join_with,
                                  std::string("|"), {.mode = ReduceMode::tree_n, .n_batch = 3});
      CHECK(graph::execute(joined, *cl.client, eo) == "0,|1,|2,|3,|4,");
      auto with_initial = graph::reduce(graph::map(graph_fns::tag, iota(4)), graph_fns::concat,
                                        {.initial = std::string("init,")});
      CHECK(graph::execute(with_initial, *cl.client, eo) == "init," + tags(4));
      // No inputs: the initial value is the result.
      auto empty = graph::reduce(graph::map(graph_fns::tag, std::vector<int>{}), graph_fns::concat,
                                 {.initial = std::string("nothing")});
      CHECK(graph::execute(empty, *cl.client, eo) == "nothing");
    }
  }
}

TEST_CASE("graph: reduce_in_pool runs combine in the workers, otherwise on the client",
          "[graph]") {
  GraphCluster cl;
  const auto here = std::hash<std::thread::id>{}(std::this_thread::get_id());
  auto g = graph::reduce(graph::map(graph_fns::tag, iota(8)), graph_fns::concat);
  graph_fns::reset_concat_threads();
  CHECK(graph::execute(g, *cl.client, {.reduce_in_pool = false}) == tags(8));
  auto threads = graph_fns::concat_threads();
  CHECK(threads.size() == 7);  // a binary tree over 8 leaves
  for (auto t : threads) CHECK(t == here);
  graph_fns::reset_concat_threads();
  CHECK(graph::execute(g, *cl.client, {.reduce_in_pool = true}) == tags(8));
  threads = graph_fns::concat_threads();
  CHECK(threads.size() == 7);
  for (auto t : threads) CHECK(t != here);
}

TEST_CASE("graph: tasks of uneven duration are balanced, not pre-assigned", "[graph]") {
  GraphCluster cl;
  // Input 0 blocks its worker until most others are done. The scheduler lets a worker hold a
  // few queued tasks (worker saturation, and up to 64 per thread for tasks known to be short),
  // which then wait behind input 0; all the others must be run by the other worker, which only
  // happens if execute binds nothing to a worker in advance (an even split would strand 150).
  constexpr int others = 300;
  graph_fns::others_finished = 0;
  graph_fns::others_needed = others - 64;
  auto out = graph::execute(graph::map(graph_fns::uneven, iota(others + 1)), *cl.client);
  CHECK(out.front() == 1);  // 0: input 0 gave up waiting
  CHECK(std::accumulate(out.begin(), out.end(), 0) == others + 1);
}

TEST_CASE("graph: max_workers bounds the map tasks running at once", "[graph]") {
  GraphCluster cl;
  graph_fns::max_concurrent = 0;
  auto out = graph::execute(graph::map(graph_fns::gauge, iota(30)), *cl.client, {.max_workers = 1});
  CHECK(out == iota(30));
  CHECK(graph_fns::max_concurrent.load() == 1);
  // With a reduce in the pool, nodes are submitted as their inputs are.
  auto g = graph::reduce(graph::map(graph_fns::tag, iota(20)), graph_fns::concat);
  CHECK(graph::execute(g, *cl.client, {.max_workers = 2, .chunksize = 3}) == tags(20));
}

TEST_CASE("graph: progress reaches the callback and counts every task", "[graph]") {
  GraphCluster cl;
  std::vector<graph::Progress> seen;
  graph::ExecuteOptions eo;
  eo.progress.callback = [&](const graph::Progress& p) { seen.push_back(p); };
  eo.progress.log_every = 10;
  eo.progress.bar = true;  // drawn only on a terminal: harmless here
  auto g = graph::reduce(graph::map(graph_fns::tag, iota(16)), graph_fns::concat);
  // Reduce tasks of 3 levels (the default): two of 7 calls (over 8 leaves each), then the
  // root's; of 1 level: a task per call, 15.
  for (std::size_t levels : {3, 1}) {
    INFO("reduce_fuse_levels " << levels);
    seen.clear();
    eo.reduce_fuse_levels = levels;
    CHECK(graph::execute(g, *cl.client, eo) == tags(16));
    REQUIRE_FALSE(seen.empty());
    const std::size_t reduce_tasks = levels == 3 ? 3 : 15;
    CHECK(seen.back().done == 16 + reduce_tasks);  // map tasks and the reduce tasks
    CHECK(seen.back().total == 16 + reduce_tasks);
    for (std::size_t i = 1; i < seen.size(); ++i) CHECK(seen[i].done > seen[i - 1].done);
  }
}

TEST_CASE("graph: a failing map task names its input and message", "[graph][errors]") {
  GraphCluster cl;
  auto expect_input_13 = [](auto&& run) {
    try {
      run();
      FAIL("no exception");
    } catch (const graph::MapError& e) {
      CHECK(e.input() == 13);
      CHECK(e.message().find("bad input 13") != std::string::npos);
      CHECK(std::string(e.what()).find("map input 13 failed: bad input 13") != std::string::npos);
    }
  };
  for (std::size_t chunksize : {1, 4}) {
    INFO("chunksize " << chunksize);
    const graph::ExecuteOptions eo{.chunksize = chunksize};
    expect_input_13([&] { graph::execute(graph::map(graph_fns::fail_on_13, iota(20)), *cl.client, eo); });
    for (bool in_pool : {true, false}) {
      INFO("in pool " << in_pool);
      auto g = graph::reduce(graph::map(graph_fns::tag_or_fail, iota(20)), graph_fns::concat);
      expect_input_13([&] {
        graph::execute(g, *cl.client, {.chunksize = chunksize, .reduce_in_pool = in_pool});
      });
      // With a max_workers window the client follows each map task (it finds the erred one
      // itself); without, the scheduler names the map task a reduce node's failure came from.
      expect_input_13([&] {
        graph::execute(g, *cl.client,
                       {.max_workers = 3, .chunksize = chunksize, .reduce_in_pool = in_pool});
      });
    }
  }
  // A reduce over one input has no reduce task: its map task is the result, followed as such.
  try {
    graph::execute(graph::reduce(graph::map(graph_fns::tag_or_fail, std::vector<int>{13}),
                                 graph_fns::concat),
                   *cl.client);
    FAIL("no exception");
  } catch (const graph::MapError& e) {
    CHECK(e.input() == 0);
    CHECK(e.message().find("bad input 13") != std::string::npos);
  }
  // The client and the cluster keep working.
  CHECK(graph::execute(graph::map(graph_fns::square, iota(3)), *cl.client) == std::vector{0, 1, 4});
}

TEST_CASE("graph: execute passes retries and priority to every task", "[graph][errors]") {
  GraphCluster cl;
  const std::vector<int> inputs{100, 101, 102};
  CHECK_THROWS_WITH(graph::execute(graph::map(graph_fns::fail_first, inputs), *cl.client),
                    Catch::Contains("first call for 10"));
  const std::vector<int> fresh{200, 201, 202};
  CHECK(graph::execute(graph::map(graph_fns::fail_first, fresh), *cl.client,
                       {.priority = 5, .retries = 1}) == fresh);
}

TEST_CASE("graph: a failing combine fails execute with its message", "[graph][errors]") {
  GraphCluster cl;
  auto g = graph::reduce(graph::map(graph_fns::tag, iota(6)), graph_fns::refuse);
  CHECK_THROWS_AS(graph::execute(g, *cl.client), TaskError);
  CHECK_THROWS_WITH(graph::execute(g, *cl.client), Catch::Contains("combine refused"));
  CHECK_THROWS_WITH(graph::execute(g, *cl.client, {.reduce_in_pool = false}),
                    Catch::Contains("combine refused"));
}

TEST_CASE("graph: bad graphs and options are rejected with std::invalid_argument",
          "[graph][errors]") {
  auto m = graph::map(graph_fns::tag, iota(4));
  using graph::ReduceOptions;
  CHECK_THROWS_AS(graph::reduce(m, graph_fns::concat, {.mode = static_cast<ReduceMode>(42)}),
                  std::invalid_argument);
  CHECK_THROWS_WITH(graph::reduce_mode_from_string("bushy"),
                    Catch::Contains("unknown reduce mode 'bushy'") && Catch::Contains("tree_n"));
  CHECK(graph::reduce_mode_from_string("tree_n") == ReduceMode::tree_n);
  for (auto mode : {ReduceMode::single_node, ReduceMode::tree, ReduceMode::tree_n})
    for (std::size_t n_batch : {0, 1}) {
      INFO(graph::to_string(mode) << " n_batch " << n_batch);
      CHECK_THROWS_WITH(graph::reduce(m, graph_fns::concat, {.mode = mode, .n_batch = n_batch}),
                        Catch::Contains("n_batch"));
    }
  auto none = graph::map(graph_fns::tag, std::vector<int>{});
  CHECK_THROWS_WITH(graph::reduce(none, graph_fns::concat), Catch::Contains("empty input list"));

  GraphCluster cl;
  // A graph edited after reduce() is checked again by execute, before anything is submitted.
  auto g = graph::reduce(m, graph_fns::concat);
  g.options.n_batch = 1;
  CHECK_THROWS_AS(graph::execute(g, *cl.client), std::invalid_argument);
  g.options.n_batch = 2;
  g.map.inputs.clear();
  CHECK_THROWS_WITH(graph::execute(g, *cl.client), Catch::Contains("empty input list"));
  CHECK_THROWS_WITH(graph::execute(m, *cl.client, {.chunksize = 0}), Catch::Contains("chunksize"));
  CHECK_THROWS_WITH(graph::execute(graph::map(graph_fns::unregistered, iota(2)), *cl.client),
                    Catch::Contains("not registered"));
}

TEST_CASE("graph child: execute arms the watchdog and teardown hangs", "[.child]") {
  GraphCluster cl;
  auto out = graph::execute(graph::map(graph_fns::square, iota(4)), *cl.client,
                            {.exit_after_seconds = 0.2});
  std::fprintf(stderr, "results safe: %d\n", out.back());
  std::this_thread::sleep_for(60s);  // a teardown that never ends
}

TEST_CASE("graph: exit_after_seconds ends a program whose teardown hangs", "[graph]") {
  auto r = test::run_self({"graph child: execute arms the watchdog and teardown hangs",
                           "--scheme", test::selected_scheme()},
                          60s);
  INFO(r.output);
  REQUIRE(r.exited);
  CHECK(r.status == kForceExitCode);
  CHECK(r.output.find("results safe: 9") != std::string::npos);
  CHECK(r.output.find("graph::execute") != std::string::npos);
}

TEST_CASE("graph child: progress with its stderr a file", "[.child]") {
  GraphCluster cl;
  graph::ExecuteOptions eo;
  eo.progress.bar = true;
  eo.progress.interval = 0ms;  // a line at every update
  auto out = graph::execute(graph::map(graph_fns::square, iota(16)), *cl.client, eo);
  std::fprintf(stderr, "results: %zu\n", out.size());
}

TEST_CASE("graph: progress off a terminal prints lines, then a final one", "[graph]") {
  auto r = test::run_self({"graph child: progress with its stderr a file", "--scheme",
                           test::selected_scheme()},
                          60s);
  INFO(r.output);
  REQUIRE(r.exited);
  CHECK(r.status == 0);
  CHECK(r.output.find("results: 16") != std::string::npos);
  CHECK(r.output.find("\r[") == std::string::npos);  // no bar: its stderr is a file
  CHECK(r.output.find("/16 tasks (") != std::string::npos);  // a line before the end
  CHECK(r.output.find("graph: 16/16 tasks done, ") != std::string::npos);
}
