// scheduler/compute_task_wire.hpp writes what a protocol::ComputeTask writes.
#include <taskwire/runtime/batch.hpp>
#include <taskwire/scheduler/compute_task_wire.hpp>

#include <catch2/catch.hpp>

using namespace taskwire;

TEST_CASE("ComputeTaskWire: the bytes of the ComputeTask it stands for", "[scheduler]") {
  protocol::TaskSpec spec{"sum-3", "sum",
                          {{protocol::ArgSpec::frame, 0, ""}, {protocol::ArgSpec::dependency, 0, "b"},
                           {protocol::ArgSpec::dependency, 0, "a"}},
                          {"b", "a"}, 5, 2, 4, {{"GPU", 1}, {"MEM", 2e9}}};
  // Dependencies in the instruction's order (not sorted); the map sorts them. "a" still runs
  // on mpi://1 (assigned ahead across workers).
  const std::vector<scheduler::DependencyLocation> deps{{"b", {"mpi://2", "tcp://h:1"}, 8},
                                                        {"a", {"mpi://1"}, 8, true}};
  protocol::ComputeTask full;
  full.spec = spec;
  full.spec.priority = -9;
  for (const auto& d : deps) full.who_has[d.key] = d.who_has;
  full.attempt = 7;
  full.given = {{"b", 1}};  // b's bytes in payload frame 1
  full.awaited = {"a"};

  runtime::BatchWriter a, b;
  a.add(protocol::Op::compute_task, scheduler::ComputeTaskWire{spec.key, spec.function, spec.args,
                                                               spec.dependencies, -9,
                                                               spec.retries, 4, spec.resources,
                                                               deps, 7, full.given});
  b.add(protocol::Op::compute_task, full);
  const auto wire = a.take(), expected = b.take();
  // Same length; and read back, the same task (the pairs' order differs, the map does not).
  CHECK(wire.frames[0].size() == expected.frames[0].size());
  runtime::for_each_op(wire, [&](runtime::OpReader& r) {
    const auto got = r.body<protocol::ComputeTask>();
    CHECK(got.spec.key == "sum-3");
    CHECK(got.spec.function == "sum");
    REQUIRE(got.spec.args.size() == 3);
    CHECK(got.spec.args[0].kind == protocol::ArgSpec::frame);
    CHECK(got.spec.args[0].frame_index == 0);
    CHECK(got.spec.args[1].kind == protocol::ArgSpec::dependency);
    CHECK(got.spec.args[2].key == "a");
    CHECK(got.spec.dependencies == spec.dependencies);
    CHECK(got.spec.priority == -9);
    CHECK(got.spec.retries == 2);
    CHECK(got.spec.user_priority == 4);
    CHECK(got.spec.resources == spec.resources);
    CHECK(got.spec.workers.empty());  // the scheduler's business only
    CHECK_FALSE(got.spec.allow_other_workers);
    CHECK(got.who_has == full.who_has);
    CHECK(got.attempt == 7);
    REQUIRE(got.given.size() == 1);
    CHECK(got.given[0].key == "b");
    CHECK(got.given[0].frame == 1);
    CHECK(got.awaited == std::vector<std::string>{"a"});
  });
  // With the dependencies in key order the bytes are identical.
  const std::vector<scheduler::DependencyLocation> sorted{deps[1], deps[0]};
  runtime::BatchWriter c;
  c.add(protocol::Op::compute_task, scheduler::ComputeTaskWire{spec.key, spec.function, spec.args,
                                                               spec.dependencies, -9,
                                                               spec.retries, 4, spec.resources,
                                                               sorted, 7, full.given});
  CHECK(c.take().frames[0].view() == expected.frames[0].view());
}
