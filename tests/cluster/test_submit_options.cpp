// SubmitOptions: retries, explicit keys, pure keys, priority, and map with options, over each
// scheme (--scheme).
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <thread>

using namespace taskwire;
using namespace std::chrono_literals;
using test::Cluster;

TEST_CASE("submit options: retries rerun a failing task, and it errs once they are used up",
          "[cluster][submit-options]") {
  Cluster cl(1);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);

  // Fails on its first two calls, succeeds on the third.
  auto enough = client.submit({.retries = 2}, cluster_fns::flaky, "enough", 2);
  CHECK(enough.get() == 3);
  CHECK(cluster_fns::calls_of("enough") == 3);

  auto too_few = client.submit({.retries = 1}, cluster_fns::flaky, "too-few", 2);
  try {
    too_few.get();
    FAIL("a task that failed twice with one retry returned");
  } catch (const TaskError& e) {
    CHECK(e.message().find("flaky too-few call 2") != std::string::npos);
  }
  CHECK(cluster_fns::calls_of("too-few") == 2);

  // Without options nothing is retried.
  CHECK_THROWS_AS(client.submit(cluster_fns::flaky, "none", 1).get(), TaskError);
  CHECK(cluster_fns::calls_of("none") == 1);
}

TEST_CASE("submit options: an explicit key is the future's, and equal keys share one task",
          "[cluster][submit-options]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);

  auto first = client.submit({.key = "shared-task"}, cluster_fns::flaky, "first", 0);
  CHECK(first.key() == "shared-task");
  CHECK(first.get() == 1);
  // Different arguments under the same key: the task already known is the answer; the second
  // submission's function never runs.
  auto second = client.submit({.key = "shared-task"}, cluster_fns::flaky, "second", 0);
  CHECK(second.key() == "shared-task");
  CHECK(second.get() == 1);
  CHECK(cluster_fns::calls_of("first") == 1);
  CHECK(cluster_fns::calls_of("second") == 0);

  auto generated = client.submit(cluster_fns::inc, 1);
  CHECK(generated.key() != "shared-task");
  CHECK(generated.get() == 2);
}

TEST_CASE("submit options: map takes the key as a prefix of one key per input",
          "[cluster][submit-options]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);

  auto futures = client.map({.key = "incs"}, cluster_fns::inc, std::vector<int>{10, 20, 30});
  REQUIRE(futures.size() == 3);
  CHECK(futures[0].key() == "incs-0");
  CHECK(futures[1].key() == "incs-1");
  CHECK(futures[2].key() == "incs-2");
  CHECK(client.gather(futures) == std::vector<int>{11, 21, 31});
}

TEST_CASE("submit options: pure submissions of equal calls share one task, across clients",
          "[cluster][submit-options][pure]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  Client other(cl.fx.registry(), cl.address);

  auto first = client.submit({.pure = true}, cluster_fns::flaky, "pure-tag", 0);
  auto again = client.submit({.pure = true}, cluster_fns::flaky, "pure-tag", 0);
  auto elsewhere = other.submit({.pure = true}, cluster_fns::flaky, "pure-tag", 0);
  CHECK(first.key() == again.key());
  CHECK(first.key() == elsewhere.key());
  CHECK(first.key().rfind("cluster_fns::flaky-", 0) == 0);
  CHECK(first.get() == 1);
  CHECK(again.get() == 1);
  CHECK(elsewhere.get() == 1);
  CHECK(cluster_fns::calls_of("pure-tag") == 1);  // the function ran once

  // Other arguments, another function, or a future argument of another key: another task.
  auto other_args = client.submit({.pure = true}, cluster_fns::flaky, "pure-tag", 1);
  CHECK(other_args.key() != first.key());
  auto a = client.submit({.pure = true}, cluster_fns::inc, 1);
  auto b = client.submit({.pure = true}, cluster_fns::inc, 2);
  CHECK(a.key() != b.key());
  CHECK(client.submit({.pure = true}, cluster_fns::add, a, 5).key() !=
        client.submit({.pure = true}, cluster_fns::add, b, 5).key());
  auto mapped = client.map({.pure = true}, cluster_fns::inc, std::vector<int>{1, 2});
  CHECK(mapped[0].key() == a.key());
  CHECK(mapped[1].key() == b.key());
  CHECK(client.gather(mapped) == std::vector<int>{2, 3});
  // Not pure: a fresh key each time, so the function runs again.
  CHECK(client.submit(cluster_fns::flaky, "impure-tag", 0).get() == 1);
  CHECK(client.submit(cluster_fns::flaky, "impure-tag", 0).get() == 2);
}

TEST_CASE("submit options: a higher priority submitted later runs first on a saturated worker",
          "[cluster][submit-options][priority]") {
  scheduler::SchedulerServerOptions options;
  options.state.worker_saturation = 1.0;       // one task per thread on the worker, the rest
  options.state.short_task_cover_seconds = 0;  // queued on the scheduler, best priority first
  Cluster cl(1, options);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);

  auto gate = client.submit(cluster_fns::gated, "priority-gate", 0);  // holds the only thread
  std::vector<Future<int>> all{gate};
  for (int i = 0; i < 3; ++i)  // one graph each: earlier generations than the next one
    all.push_back(client.submit(cluster_fns::record, "prio-low-" + std::to_string(i), i));
  all.push_back(client.submit({.priority = 10}, cluster_fns::record, "prio-high", 9));
  all.push_back(client.submit({.priority = -1}, cluster_fns::record, "prio-below", 8));
  auto queued = [&] {
    return cl.scheduler->inspect([](const scheduler::SchedulerState& s) { return s.queued_count(); });
  };
  for (int i = 0; i < 500 && queued() < 5; ++i) std::this_thread::sleep_for(20ms);
  REQUIRE(queued() == 5);  // every submission arrived while the gate held the worker
  cluster_fns::open_gate("priority-gate");
  client.wait(all);
  std::vector<std::string> order;
  for (const auto& tag : cluster_fns::run_log())
    if (tag.rfind("prio-", 0) == 0) order.push_back(tag);
  CHECK(order == std::vector<std::string>{"prio-high", "prio-low-0", "prio-low-1", "prio-low-2",
                                          "prio-below"});
}
