// The worker's thread pool: priority order, stop semantics, jobs that throw.
#include <taskwire/worker/executor.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using taskwire::worker::Executor;

TEST_CASE("executor: queued jobs run lowest priority first, ties in submission order",
          "[worker][executor]") {
  Executor ex(1);
  ex.start();
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::promise<void> blocked;
  ex.submit({}, [&] {
    blocked.set_value();
    gate.wait();
  });
  REQUIRE(blocked.get_future().wait_for(10s) == std::future_status::ready);
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> all_done;
  for (int p : {5, 1, 3, 1, 0}) {
    ex.submit({.order = p}, [&, p] {
      std::lock_guard lock(mu);
      order.push_back(p * 10 + static_cast<int>(order.size()));
      if (order.size() == 5) all_done.set_value();
    });
  }
  CHECK(ex.queued() == 5);
  release.set_value();
  REQUIRE(all_done.get_future().wait_for(10s) == std::future_status::ready);
  // 0 first, then the two 1s in submission order, then 3, then 5.
  CHECK(order == std::vector<int>{0, 11, 12, 33, 54});
}

TEST_CASE("executor: nthreads jobs run at once", "[worker][executor]") {
  Executor ex(2);
  ex.start();
  std::promise<void> a_started, b_started, release;
  std::shared_future<void> gate = release.get_future().share();
  ex.submit({}, [&] { a_started.set_value(); gate.wait(); });
  ex.submit({}, [&] { b_started.set_value(); gate.wait(); });
  CHECK(a_started.get_future().wait_for(10s) == std::future_status::ready);
  CHECK(b_started.get_future().wait_for(10s) == std::future_status::ready);
  CHECK(ex.running() == 2);
  release.set_value();
  ex.stop();
  CHECK(ex.running() == 0);
}

TEST_CASE("executor: stop lets running jobs finish and discards queued ones",
          "[worker][executor]") {
  // Ordered by a gate, not by time: the running job holds until stop() has discarded the
  // queued one (the queue empties then, and only then: the one thread is held).
  Executor ex(1);
  ex.start();
  std::promise<void> started, release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<bool> finished{false}, ran_queued{false}, stop_returned{false};
  std::atomic<bool> stop_returned_before_job_ended{false};
  ex.submit({}, [&] {
    started.set_value();
    gate.wait();
    stop_returned_before_job_ended = stop_returned.load();
    finished = true;
  });
  REQUIRE(started.get_future().wait_for(10s) == std::future_status::ready);
  REQUIRE(ex.submit({}, [&] { ran_queued = true; }));
  CHECK(ex.queued() == 1);
  auto stopped = std::async(std::launch::async, [&] {
    ex.stop();
    stop_returned = true;
  });
  const auto give_up = std::chrono::steady_clock::now() + 10s;  // a liveness bound only
  while (ex.queued() != 0) {
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    std::this_thread::yield();
  }
  CHECK(ex.running() == 1);
  CHECK_FALSE(ex.submit({}, [] {}));  // stopping: refused
  release.set_value();
  REQUIRE(stopped.wait_for(10s) == std::future_status::ready);
  CHECK(finished);
  CHECK_FALSE(stop_returned_before_job_ended);
  CHECK_FALSE(ran_queued);
  CHECK(ex.running() == 0);
  ex.stop();  // idempotent
}

TEST_CASE("executor: a job that throws does not take its thread down, and stop from a pool "
          "thread is refused", "[worker][executor]") {
  Executor ex(1);
  ex.start();
  ex.submit({}, [] { throw std::runtime_error("job failure"); });
  std::promise<bool> refused;
  ex.submit({.order = 1}, [&] {
    try {
      ex.stop();
      refused.set_value(false);
    } catch (const std::logic_error&) {
      refused.set_value(true);
    }
  });
  auto f = refused.get_future();
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  CHECK(f.get());
  std::promise<void> still_runs;
  CHECK(ex.submit({}, [&] { still_runs.set_value(); }));  // the refused stop changed nothing
  CHECK(still_runs.get_future().wait_for(10s) == std::future_status::ready);
}
