// Waiting on many futures: as_completed, wait(count, timeout), done-callbacks and then, and
// cancel between clients, over each scheme (--scheme). A task that must finish last waits on
// a gate the test opens (cluster_fns::gated), so every order checked here is decided by the
// test, not by timing.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"
#include "tests/cluster/log_capture.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <set>
#include <thread>

using namespace taskwire;
using namespace std::chrono_literals;
using test::Cluster;

namespace {
// True once the scheduler holds `key` (so a submission from one client has arrived before
// another client's, which travels on its own connection); polls for up to 10 s.
bool scheduler_holds(Cluster& cl, const std::string& key) {
  for (int i = 0; i < 500; ++i) {
    if (cl.scheduler->inspect([&](const scheduler::SchedulerState& s) { return s.contains(key); }))
      return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// One worker with two threads: a gated task holds one, the other runs the rest.
struct TwoThreadCluster : Cluster {
  TwoThreadCluster() : Cluster(0) { add_worker(2); }
};
}  // namespace

TEST_CASE("as_completed yields a fast task before a slow one submitted earlier",
          "[cluster][as-completed]") {
  TwoThreadCluster cl;
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);

  auto slow = client.submit(cluster_fns::gated, "ac-slow", 1);
  auto fast = client.submit(cluster_fns::inc, 2);
  auto ac = client.as_completed(std::vector<Future<int>>{slow, fast});
  CHECK(ac.size() == 2);
  auto first = ac.next();
  REQUIRE(first);
  CHECK(first->key() == fast.key());
  CHECK(first->get() == 3);
  CHECK_FALSE(slow.done());  // yielded while the other was still running
  ac.add(client.submit(cluster_fns::inc, 10));  // added while iterating
  auto second = ac.next();
  REQUIRE(second);
  CHECK(second->get() == 11);
  cluster_fns::open_gate("ac-slow");
  auto third = ac.next();
  REQUIRE(third);
  CHECK(third->key() == slow.key());
  CHECK_FALSE(ac.next());
  CHECK(ac.empty());
}

TEST_CASE("as_completed: a range-for yields every future once, a duplicate twice",
          "[cluster][as-completed]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  std::vector<int> inputs(50);
  for (int i = 0; i < 50; ++i) inputs[static_cast<std::size_t>(i)] = i;
  auto futures = client.map(cluster_fns::inc, inputs);
  futures.push_back(futures.front());
  std::multiset<int> seen;
  for (auto& f : client.as_completed(futures)) seen.insert(f.get());
  CHECK(seen.size() == 51);
  CHECK(seen.count(1) == 2);
  for (int i = 1; i <= 50; ++i) CHECK(seen.count(i) >= 1);
}

TEST_CASE("wait returns once count are done, or at the timeout with the rest not done",
          "[cluster][wait]") {
  TwoThreadCluster cl;
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);

  auto slow = client.submit(cluster_fns::gated, "wait-slow", 1);
  auto a = client.submit(cluster_fns::inc, 1);
  auto b = client.submit(cluster_fns::inc, 2);
  std::vector<Future<int>> all{slow, a, b};

  auto [done, not_done] = client.wait(all, {.count = 2});
  REQUIRE(done.size() == 2);
  CHECK(done[0].key() == a.key());
  CHECK(done[1].key() == b.key());
  REQUIRE(not_done.size() == 1);
  CHECK(not_done[0].key() == slow.key());

  // All three cannot be done while the gate is closed: the timeout ends the wait.
  auto timed = client.wait(all, {.timeout = 50ms});
  CHECK(timed.done.size() == 2);
  REQUIRE(timed.not_done.size() == 1);
  CHECK(timed.not_done[0].key() == slow.key());

  cluster_fns::open_gate("wait-slow");
  auto finished = client.wait(all, {});
  CHECK(finished.done.size() == 3);
  CHECK(finished.not_done.empty());
  CHECK(slow.get() == 1);
}

TEST_CASE("done-callbacks run on a client thread that may block, in order, also when added late",
          "[cluster][callbacks]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);

  // The first callback blocks until the test has another task's result: on the thread that
  // reads the scheduler's reports, that result could not arrive before it gave up.
  std::promise<void> release;
  auto released = release.get_future();
  std::promise<bool> first_ran;
  auto first_result = first_ran.get_future();
  const auto test_thread = std::this_thread::get_id();
  std::atomic<bool> other_thread{false};
  auto f = client.submit(cluster_fns::inc, 1);
  f.add_done_callback([&](const Future<int>& done) {
    other_thread = std::this_thread::get_id() != test_thread;
    const bool in_time = released.wait_for(60s) == std::future_status::ready;
    first_ran.set_value(in_time && done.get() == 2);
  });
  CHECK(client.submit(cluster_fns::inc, 5).get() == 6);
  release.set_value();
  CHECK(first_result.get());
  CHECK(other_thread);

  // Added after the future is done: it runs all the same.
  std::promise<int> late;
  f.add_done_callback([&](const Future<int>& done) { late.set_value(done.get()); });
  CHECK(late.get_future().get() == 2);
}

TEST_CASE("a done-callback that throws is logged and the next one still runs", "[cluster][callbacks]") {
  Cluster cl(1);
  REQUIRE(cl.wait_workers(1));
  test::LogCapture log(spdlog::level::err);
  Client client(cl.fx.registry(), cl.address);
  auto f = client.submit(cluster_fns::inc, 1);
  f.add_done_callback([](const Future<int>&) { throw std::runtime_error("callback boom"); });
  std::promise<void> next;
  f.add_done_callback([&](const Future<int>&) { next.set_value(); });
  next.get_future().get();  // callbacks run in order: the throwing one is over
  CHECK_THAT(log.text(), Catch::Contains("callback boom") && Catch::Contains(f.key()));
}

TEST_CASE("then passes on the result, the task's error and the continuation's own",
          "[cluster][callbacks]") {
  Cluster cl(1);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);
  auto doubled = client.submit(cluster_fns::inc, 20).then([](int v) { return 2 * v; });
  CHECK(doubled.get() == 42);
  auto failed = client.submit(cluster_fns::fail_on, 13).then([](int v) { return v; });
  CHECK_THROWS_AS(failed.get(), TaskError);
  auto thrown = client.submit(cluster_fns::inc, 1).then([](int) -> int {
    throw std::logic_error("continuation boom");
  });
  CHECK_THROWS_WITH(thrown.get(), "continuation boom");
  std::atomic<int> seen{0};
  client.submit(cluster_fns::inc, 3).then([&](int v) { seen = v; }).get();
  CHECK(seen == 4);
}

TEST_CASE("cancel: without force a client lets go of a shared task, with force it ends it",
          "[cluster][cancel]") {
  TwoThreadCluster cl;
  REQUIRE(cl.wait_workers(1));
  Client owner(cl.fx.registry(), cl.address);
  Client other(cl.fx.registry(), cl.address);

  auto mine = owner.submit({.key = "shared-gated"}, cluster_fns::gated, "cancel-shared", 7);
  REQUIRE(scheduler_holds(cl, "shared-gated"));
  auto theirs = other.submit({.key = "shared-gated"}, cluster_fns::gated, "cancel-shared", 7);
  theirs.cancel();
  CHECK_THROWS_WITH(theirs.get(), Catch::Contains("cancelled"));
  CHECK_FALSE(mine.done());  // refused: the owner's task runs on
  cluster_fns::open_gate("cancel-shared");
  CHECK(mine.get() == 7);

  auto kept = owner.submit({.key = "forced-gated"}, cluster_fns::gated, "cancel-forced", 8);
  REQUIRE(scheduler_holds(cl, "forced-gated"));
  auto forcer = other.submit({.key = "forced-gated"}, cluster_fns::gated, "cancel-forced", 8);
  other.cancel(std::vector<Future<int>>{forcer}, true);
  CHECK_THROWS_WITH(kept.get(), Catch::Contains("cancelled by client"));
  cluster_fns::open_gate("cancel-forced");  // frees the worker's thread
}
