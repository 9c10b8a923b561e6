// Work stealing over each scheme (--scheme): a worker held by a stuck task does not keep the
// tasks queued behind it; an idle worker takes them.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

using namespace taskwire;
using test::Cluster;

TEST_CASE("stealing: tasks queued behind a stuck task complete on the other worker",
          "[cluster][stealing]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  const std::string gate = "stuck-" + cl.address;
  struct OpenOnExit {  // a failing check must not leave a worker blocked for minutes
    std::string gate;
    ~OpenOnExit() { cluster_fns::open_gate(gate); }
  } open_on_exit{gate};

  auto stuck = client.submit(cluster_fns::hold, gate);
  REQUIRE(cluster_fns::entered(gate));
  const auto holder = cl.scheduler->inspect(
      [&](const scheduler::SchedulerState& s) { return s.processing_on(stuck.key()); });
  REQUIRE(holder);

  // Each worker has room for two root tasks, so without stealing some of these wait on the
  // holder until the gate opens, which happens only after all of them are done.
  std::vector<int> inputs(8);
  for (int i = 0; i < 8; ++i) inputs[static_cast<std::size_t>(i)] = i;
  auto futures = client.map(cluster_fns::slow_inc, inputs);
  for (std::size_t i = 0; i < futures.size(); ++i) {
    INFO("task " << i << " of the map");
    REQUIRE(futures[i].wait_for(std::chrono::seconds(60)));
    CHECK(futures[i].get() == static_cast<int>(i) + 1);
    const auto who_has = cl.scheduler->inspect(
        [&](const scheduler::SchedulerState& s) { return s.who_has(futures[i].key()); });
    CHECK(who_has != std::vector<std::string>{*holder});
  }
  CHECK(cl.scheduler->inspect([&](const scheduler::SchedulerState& s) {
    return s.processing_on(stuck.key());
  }) == holder);  // the running task was never moved

  cluster_fns::open_gate(gate);
  CHECK(stuck.get() == 1);
}
