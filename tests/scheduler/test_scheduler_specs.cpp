// When the scheduler tells its server to drop a task's spec (its argument frames): at once for
// a spec that does not become a task, and once a task can never run again; never while a
// retry, a worker's loss or a lost result may need to send it again.
#include "tests/scheduler/scheduler_harness.hpp"

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;
using S = TaskStatus;

namespace {

// A task with its own spec handle: distinct handles tell which spec a DropTaskSpec names.
TaskSpec with_spec(TaskSpec t, SpecRef spec) {
  t.spec = spec;
  return t;
}

std::vector<SpecRef> dropped(const Instructions& instructions) {
  std::vector<SpecRef> specs;
  for (const auto& d : only<DropTaskSpec>(instructions)) specs.push_back(d.spec);
  std::sort(specs.begin(), specs.end());
  return specs;
}

}  // namespace

TEST_CASE("scheduler: the specs of culled, already known and duplicate tasks are dropped at once",
          "[scheduler][specs]") {
  Harness h;
  h.add_worker("tcp://a:1");
  // "unneeded" is culled (no wanted key needs it); the second "x" is a duplicate.
  const auto& first = h.submit({with_spec(task("x"), 1), with_spec(task("unneeded"), 2),
                                with_spec(task("x"), 3)},
                               {"x"});
  CHECK(dropped(first) == std::vector<SpecRef>{2, 3});
  // Known already: the scheduler keeps the spec it has.
  CHECK(dropped(h.submit({with_spec(task("x"), 4)})) == std::vector<SpecRef>{4});
  // Bad: an unknown dependency, and what only it needed.
  CHECK(dropped(h.submit({with_spec(task("in"), 5), with_spec(task("y", {"in", "nope"}), 6)},
                         {"y"})) == std::vector<SpecRef>{5, 6});
  CHECK(h.s.task_count() == 1);
}

TEST_CASE("scheduler: the specs of a refused graph are dropped at once", "[scheduler][specs]") {
  Harness h({.max_tasks = 2});
  h.add_worker("tcp://a:1");
  const auto& out = h.submit({with_spec(task("a"), 1), with_spec(task("b"), 2),
                              with_spec(task("c", {"a", "b"}), 3)},
                             {"c"});
  CHECK(only<ReportTaskErred>(out).size() == 1);
  CHECK(dropped(out) == std::vector<SpecRef>{1, 2, 3});
}

TEST_CASE("scheduler: a spec is kept through retries, worker loss and lost results",
          "[scheduler][specs]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  auto t = with_spec(task("x"), 7);
  t.retries = 1;
  CHECK(dropped(h.submit({t})).empty());
  CHECK(dropped(h.fail("x", "flaky")).empty());  // sent again: it needs its spec
  const auto first = *h.s.processing_on("x");
  const auto& moved = h.handle(RemoveWorker{first, "comm closed", false, ""});
  CHECK(dropped(moved).empty());
  REQUIRE(only<ComputeTask>(moved).size() == 1);
  CHECK(only<ComputeTask>(moved)[0].spec == 7);
  CHECK(dropped(h.finish("x")).empty());
  // In memory on the last worker, which dies: computed again, from the same spec.
  h.add_worker("tcp://c:1");
  const auto holder = h.s.who_has("x").at(0);
  const auto& lost = h.handle(RemoveWorker{holder, "comm closed", false, ""});
  CHECK(dropped(lost).empty());
  REQUIRE(only<ComputeTask>(lost).size() == 1);
  CHECK(only<ComputeTask>(lost)[0].spec == 7);
  h.finish("x");
  CHECK(dropped(h.release({"x"})) == std::vector<SpecRef>{7});  // forgotten
}

TEST_CASE("scheduler: a task erred for good, and its erred dependents, drop their specs",
          "[scheduler][specs]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({with_spec(task("x"), 1), with_spec(task("y", {"x"}), 2)});
  const auto& erred = h.fail("x");
  CHECK(h.s.task_state("y") == S::erred);
  CHECK(dropped(erred) == std::vector<SpecRef>{1, 2});
  CHECK(dropped(h.release({"x", "y"})).empty());  // each dropped once only
  CHECK(h.s.task_count() == 0);
}
