// Work stealing over each scheme (--scheme): a worker held by a stuck task does not keep the
// tasks queued behind it; an idle worker takes them.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using namespace taskwire;
using test::Cluster;

namespace {
/// A task holding one worker of `cl` until the end of the scope (or open_gate): `holder` is
/// that worker's address.
struct StuckTask {
  std::string gate;
  Future<int> future;
  std::optional<std::string> holder;

  StuckTask(Cluster& cl, Client& client, const std::string& name)
      : gate(name + "-" + cl.address), future(client.submit(cluster_fns::hold, gate)) {
    REQUIRE(cluster_fns::entered(gate));
    holder = cl.scheduler->inspect(
        [&](const scheduler::SchedulerState& s) { return s.processing_on(future.key()); });
    REQUIRE(holder);
  }
  ~StuckTask() { cluster_fns::open_gate(gate); }  // a failing check must not leave it blocked
};
}  // namespace

TEST_CASE("stealing: tasks queued behind a stuck task complete on the other worker",
          "[cluster][stealing]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  StuckTask stuck(cl, client, "stuck");
  const auto& holder = stuck.holder;

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
    return s.processing_on(stuck.future.key());
  }) == holder);  // the running task was never moved

  cluster_fns::open_gate(stuck.gate);
  CHECK(stuck.future.get() == 1);
}

TEST_CASE("stealing: off, a task placed behind a stuck task waits for it",
          "[cluster][stealing]") {
  scheduler::SchedulerServerOptions options;
  options.state.work_stealing = false;
  Cluster cl(2, options);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  StuckTask stuck(cl, client, "stuck-off");
  const auto& holder = stuck.holder;
  std::vector<int> inputs{0, 1, 2, 3, 4, 5, 6, 7};
  auto futures = client.map(cluster_fns::slow_inc, inputs);

  // Wait (bounded) until every task is done or processing on the holder, then count the
  // latter: the holder's second slot took one, and nothing takes it away.
  auto behind_stuck = [&] {
    return cl.scheduler->inspect([&](const scheduler::SchedulerState& s) {
      int behind = 0, done = 0;
      for (const auto& f : futures) {
        if (s.task_state(f.key()) == scheduler::TaskStatus::memory) ++done;
        if (s.processing_on(f.key()) == holder) ++behind;
      }
      return std::make_pair(behind, done);
    });
  };
  auto [behind, done] = behind_stuck();
  for (int i = 0; i < 6000 && behind + done < static_cast<int>(futures.size()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::tie(behind, done) = behind_stuck();
  }
  REQUIRE(behind + done == static_cast<int>(futures.size()));
  CHECK(behind >= 1);

  cluster_fns::open_gate(stuck.gate);
  for (std::size_t i = 0; i < futures.size(); ++i)
    CHECK(futures[i].get() == static_cast<int>(i) + 1);
  CHECK(stuck.future.get() == 1);
}
