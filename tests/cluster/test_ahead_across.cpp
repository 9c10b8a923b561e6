// Assign ahead across workers, end to end: a stencil whose steps are sent ahead of inputs
// running on the other worker; each worker asks the other for them with a waiting get_data
// and the producer answers once done. Results checked against a direct computation.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

using namespace taskwire;
using namespace taskwire::test;

TEST_CASE("assign ahead across workers: a stencil sent ahead across two workers is right",
          "[cluster][assign]") {
  scheduler::SchedulerServerOptions options;
  options.state.assign_ahead_across_workers = true;
  Cluster cl(2, options);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  // The two roots hold their workers until the gates open, so that the steps are sent ahead
  // of them, each to one of the two workers.
  const std::string gate = "ahead-across-" + cl.address;
  std::vector<Future<int>> step{client.submit({.workers = {"w0"}}, cluster_fns::gated, gate, 1),
                                client.submit({.workers = {"w1"}}, cluster_fns::gated, gate, 2)};
  std::vector<int> expected{1, 2};
  const int steps = 12;
  std::vector<std::string> first;
  for (int s = 0; s < steps; ++s) {
    std::vector<Future<int>> next{client.submit(cluster_fns::add, step[0], step[1]),
                                  client.submit(cluster_fns::add, step[1], step[0])};
    if (s == 0) first = {next[0].key(), next[1].key()};
    step = std::move(next);
    expected = {expected[0] + expected[1], expected[1] + expected[0]};
  }
  const auto state = [&](const std::string& key) {
    return cl.scheduler->inspect([&](const scheduler::SchedulerState& s) {
      return std::pair(s.task_state(key), s.processing_on(key));
    });
  };
  REQUIRE(cl.wait_until([&] {
    return state(first[0]).first == scheduler::TaskStatus::assigned &&
           state(first[1]).first == scheduler::TaskStatus::assigned;
  }));
  // One each: each waits there for the other worker's root.
  CHECK(state(first[0]).second != state(first[1]).second);
  cluster_fns::open_gate(gate);
  CHECK(step[0].get() == expected[0]);
  CHECK(step[1].get() == expected[1]);
}
