// Client::retire_workers against a scheduler and workers in this process, over the scheme
// given with --scheme: workers leave mid-graph and every result stays right, nothing lost.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <catch2/catch.hpp>

#include <future>
#include <numeric>

using namespace taskwire;
using namespace std::chrono_literals;

namespace {
std::string worker_name(Client& client, const std::string& address) {
  for (const auto& w : client.scheduler_info().workers)
    if (w.address == address) return w.name;
  return "";
}
}  // namespace

TEST_CASE("cluster: retire_workers mid-graph: the running task finishes, the queued ones move, "
          "every result is right and none is recomputed",
          "[cluster][retirement]") {
  test::Connected c(3);
  std::vector<int> inputs(60);
  std::iota(inputs.begin(), inputs.end(), 0);
  auto xs = c.client.map(cluster_fns::inc, inputs);
  REQUIRE(c.client.gather(xs).size() == 60);  // spread over the three workers
  auto held = c.client.submit(cluster_fns::gated, std::string("retire-gate"), 7);
  REQUIRE(cluster_fns::entered("retire-gate"));
  const auto running_on = c.cl.scheduler->inspect(
      [&](const scheduler::SchedulerState& s) { return s.processing_on(held.key()); });
  REQUIRE(running_on);
  auto more = c.client.map(cluster_fns::slow_inc, inputs);
  auto total = c.client.submit(cluster_fns::sum, xs);

  // By name for the one running the gated task, by address for another.
  std::string other;
  for (const auto& w : c.client.scheduler_info().workers)
    if (w.address != *running_on && other.empty()) other = w.address;
  const std::string by_name = worker_name(c.client, *running_on);
  auto retiring = std::async(std::launch::async, [&] {
    return c.client.retire_workers({by_name, other}, 60s);
  });
  REQUIRE(test::Cluster::wait_until([&] {
    return c.cl.scheduler->inspect([&](const scheduler::SchedulerState& s) {
      const auto w = s.worker(*running_on);
      return w && w->retiring;
    });
  }));
  // It runs the gated task: it cannot leave before that finishes.
  CHECK(retiring.wait_for(100ms) == std::future_status::timeout);
  cluster_fns::open_gate("retire-gate");
  REQUIRE(retiring.wait_for(60s) == std::future_status::ready);
  const auto retired = retiring.get();
  CHECK(std::set<std::string>(retired.begin(), retired.end()) ==
        std::set<std::string>{*running_on, other});

  std::vector<int> expected(60), expected_more(60);
  std::iota(expected.begin(), expected.end(), 1);
  std::iota(expected_more.begin(), expected_more.end(), 1);
  CHECK(c.client.gather(xs) == expected);
  CHECK(c.client.gather(more) == expected_more);
  CHECK(total.get() == std::accumulate(expected.begin(), expected.end(), 0L));
  CHECK(held.get() == 7);
  const auto counts = c.cl.scheduler->inspect(
      [](const scheduler::SchedulerState& s) { return s.task_counts(); });
  CHECK(counts.lost == 0);
  CHECK(counts.erred == 0);
  CHECK(counts.workers_retired == 2);
  CHECK(counts.completed == 60 + 1 + 60 + 1);  // each task ran once
  const auto info = c.client.scheduler_info();
  REQUIRE(info.workers.size() == 1);

  // The last worker holds every result: nowhere to copy them, so it is not retired.
  try {
    c.client.retire_workers(std::size_t{1}, 30s);
    FAIL("the last worker holding data was retired");
  } catch (const RetireError& e) {
    CHECK(e.retired().empty());
    REQUIRE(e.failures().size() == 1);
    CHECK(e.failures()[0].worker == info.workers[0].address);
    CHECK_THAT(e.what(), Catch::Contains("no other worker can take its"));
  }
  CHECK(c.client.scheduler_info().workers.size() == 1);
  CHECK(c.client.submit(cluster_fns::inc, 41).get() == 42);  // and it takes work again
  CHECK_THROWS_WITH(c.client.retire_workers({"nobody"}, 30s),
                    Catch::Contains("nobody: no worker of that address or name is connected"));
}
