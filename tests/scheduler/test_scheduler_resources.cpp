// Restrictions in the scheduler state machine: worker resources (placed only where enough
// is free, released when a task leaves its worker), workers= and allow_other_workers, tasks
// no worker can run (no-worker, a warning, unrunnable()), and paused workers.
#include "tests/scheduler/scheduler_harness.hpp"

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;

namespace {

TaskSpec needing(std::string key, taskwire::runtime::Resources resources,
                 std::string function = "inc") {
  TaskSpec t = task(std::move(key), {}, std::move(function));
  t.resources = std::move(resources);
  return t;
}

TaskSpec pinned(std::string key, std::vector<std::string> workers, bool loose = false) {
  TaskSpec t = task(std::move(key));
  t.workers = std::move(workers);
  t.allow_other_workers = loose;
  return t;
}

void add_worker_with(Harness& h, const std::string& address, taskwire::runtime::Resources r,
                     int nthreads = 1, const std::string& name = "") {
  h.handle(AddWorker{address, nthreads, name, 0, "", false, std::move(r)});
}

std::vector<std::string> warnings(const Instructions& out) {
  std::vector<std::string> messages;
  for (const LogEvent& l : only<LogEvent>(out))
    if (l.level == LogLevel::warning) messages.push_back(l.message);
  return messages;
}

}  // namespace

TEST_CASE("resources: a task needing GPU goes only to the worker offering it",
          "[scheduler][resources]") {
  Harness h;
  h.add_worker("a", 4);
  add_worker_with(h, "b", {{"GPU", 1}});
  h.add_worker("c", 4);
  h.submit({task("x1"), needing("g", {{"GPU", 1}}), task("x2")});
  CHECK(h.s.processing_on("g") == "b");
  CHECK(h.s.worker("b")->used_resources == taskwire::runtime::Resources{{"GPU", 1}});
  h.finish("g");
  CHECK(h.s.worker("b")->used_resources.empty());
}

TEST_CASE("resources: a task waits for its resource to be free, then takes it",
          "[scheduler][resources]") {
  Harness h;
  add_worker_with(h, "b", {{"GPU", 1}}, 4);
  h.submit({needing("g1", {{"GPU", 1}}), needing("g2", {{"GPU", 1}})});
  CHECK(h.s.processing_on("g1") == "b");
  CHECK(h.s.task_state("g2") == TaskStatus::no_worker);
  // Busy, not missing: no warning, and not listed as unrunnable.
  CHECK(warnings(h.last).empty());
  CHECK(h.s.unrunnable(10).empty());
  const auto& out = h.finish("g1");
  CHECK(computed(out) == std::vector<std::string>{"g2"});
  CHECK(h.s.processing_on("g2") == "b");
}

TEST_CASE("resources: amounts add up: GPU=2 takes two GPU=1 tasks, not a third",
          "[scheduler][resources]") {
  Harness h;
  add_worker_with(h, "b", {{"GPU", 2}, {"MEM", 10e9}}, 4);
  h.submit({needing("g1", {{"GPU", 1}, {"MEM", 4e9}}), needing("g2", {{"GPU", 1}, {"MEM", 4e9}}),
            needing("g3", {{"GPU", 1}}), needing("m", {{"MEM", 4e9}})});
  CHECK(h.s.processing_on("g1") == "b");
  CHECK(h.s.processing_on("g2") == "b");
  CHECK(h.s.task_state("g3") == TaskStatus::no_worker);  // GPU used up
  CHECK(h.s.task_state("m") == TaskStatus::no_worker);   // 8e9 of 10e9 MEM used
  h.finish("g1");
  CHECK(h.s.processing_on("g3") == "b");
  CHECK(h.s.processing_on("m") == "b");
}

TEST_CASE("resources: released, erred, cancelled or lost with its worker, a task gives its "
          "resources back",
          "[scheduler][resources]") {
  Harness h;
  add_worker_with(h, "b", {{"GPU", 1}});
  h.submit({needing("g1", {{"GPU", 1}}), needing("g2", {{"GPU", 1}}),
            needing("g3", {{"GPU", 1}})});
  CHECK(h.s.processing_on("g1") == "b");
  h.release({"g1"});
  CHECK(h.s.processing_on("g2") == "b");
  h.fail("g2");
  CHECK(h.s.processing_on("g3") == "b");
  h.handle(RemoveWorker{"b", "connection lost", false, "", 0});
  CHECK(h.s.task_state("g3") == TaskStatus::no_worker);
  add_worker_with(h, "b2", {{"GPU", 1}});
  CHECK(h.s.processing_on("g3") == "b2");
}

TEST_CASE("resources: a resource no worker has waits in no-worker, warned once and listed, "
          "until a worker with it joins",
          "[scheduler][resources]") {
  Harness h;
  h.add_worker("a", 2);
  const auto& out = h.submit({needing("t", {{"TPU", 1}}), task("x")});
  CHECK(h.s.task_state("t") == TaskStatus::no_worker);
  CHECK(h.s.processing_on("x") == "a");
  const auto warned = warnings(out);
  REQUIRE(warned.size() == 1);
  CHECK_THAT(warned[0], Catch::Contains("'t'") && Catch::Contains("TPU=1"));
  const auto listed = h.s.unrunnable(10);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].key == "t");
  CHECK(listed[0].needs == "resources TPU=1");
  CHECK(h.s.no_worker_count() == 1);
  // Another worker without it changes nothing, and warns no more.
  add_worker_with(h, "b", {{"GPU", 1}});
  CHECK(warnings(h.last).empty());
  CHECK(h.s.task_state("t") == TaskStatus::no_worker);
  add_worker_with(h, "c", {{"TPU", 1}});
  CHECK(computed(h.last) == std::vector<std::string>{"t"});
  CHECK(h.s.processing_on("t") == "c");
  CHECK(h.s.unrunnable(10).empty());
}

TEST_CASE("workers=: tasks run only on the workers named, by address or name",
          "[scheduler][resources]") {
  Harness h;
  h.add_worker("a", 4);
  add_worker_with(h, "b", {}, 1, "bee");
  h.submit({pinned("p1", {"b"}), pinned("p2", {"bee"}), pinned("p3", {"b"}), task("x")});
  CHECK(h.s.processing_on("p1") == "b");
  CHECK(h.s.processing_on("p2") == "b");
  CHECK(h.s.processing_on("p3") == "b");
  CHECK(h.s.processing_on("x") == "a");
  // Nor are they stolen by the idle worker a.
  CHECK(only<StealRequest>(h.last).empty());
}

TEST_CASE("resources: many tasks with the same unmet needs log one warning, not one each",
          "[scheduler][resources]") {
  Harness h;
  h.add_worker("a", 2);
  const auto& out = h.submit({needing("t1", {{"TPU", 1}}), needing("t2", {{"TPU", 1}}),
                              needing("t3", {{"TPU", 1}}), needing("f", {{"FPGA", 1}})});
  const auto warned = warnings(out);
  REQUIRE(warned.size() == 2);
  CHECK_THAT(warned[0], Catch::Contains("'t1'") && Catch::Contains("TPU=1"));
  CHECK_THAT(warned[1], Catch::Contains("'f'") && Catch::Contains("FPGA=1"));
  CHECK(h.s.unrunnable(10).size() == 4);
  // A worker joining may change what is missing: the next such task is logged again.
  add_worker_with(h, "b", {{"GPU", 1}});
  CHECK(warnings(h.submit({needing("t4", {{"TPU", 1}})})).size() == 1);
}

TEST_CASE("workers=: naming no connected worker waits until it joins, allow_other_workers "
          "runs elsewhere",
          "[scheduler][resources]") {
  Harness h;
  h.add_worker("a");
  const auto& out = h.submit({pinned("strict", {"zed"}), pinned("loose", {"zed"}, true)});
  CHECK(h.s.task_state("strict") == TaskStatus::no_worker);
  CHECK(h.s.processing_on("loose") == "a");
  REQUIRE(warnings(out).size() == 1);
  CHECK_THAT(warnings(out)[0], Catch::Contains("'strict'") && Catch::Contains("zed"));
  add_worker_with(h, "z", {}, 1, "zed");
  CHECK(h.s.processing_on("strict") == "z");
}

TEST_CASE("workers=: allow_other_workers prefers the named worker while it can take the task",
          "[scheduler][resources]") {
  Harness h;
  h.add_worker("a", 4);
  h.add_worker("b", 4);
  h.submit({pinned("l1", {"b"}, true), pinned("l2", {"b"}, true)});
  CHECK(h.s.processing_on("l1") == "b");
  CHECK(h.s.processing_on("l2") == "b");
}

TEST_CASE("paused: a paused worker gets no new task, and gets them once it resumes",
          "[scheduler][resources]") {
  Harness h;
  h.add_worker("a", 2);
  h.add_worker("b", 2);
  h.handle(WorkerStatusChanged{"b", true, ""});
  CHECK(h.s.worker("b")->paused);
  h.submit({task("x1"), task("x2"), task("x3"), task("x4"), task("x5")});
  CHECK(h.s.processing("b").empty());
  CHECK(h.s.processing("a").size() == 3);  // ceil(2 * 1.1) slots; the rest queue
  CHECK(h.s.queued_count() == 2);
  const auto& out = h.handle(WorkerStatusChanged{"b", false, ""});
  CHECK(sorted(computed(out)) == std::vector<std::string>{"x4", "x5"});
  CHECK(h.s.processing("b").size() == 2);
}

TEST_CASE("paused: tasks with dependencies and restricted tasks avoid a paused worker, and "
          "wait while every worker is paused",
          "[scheduler][resources]") {
  Harness h;
  add_worker_with(h, "a", {{"GPU", 1}});
  h.submit({task("d")});
  h.finish("d");
  h.handle(WorkerStatusChanged{"a", true, ""});
  h.submit({task("y", {"d"}), needing("g", {{"GPU", 1}})}, {"y", "g"});
  CHECK(h.s.task_state("y") == TaskStatus::no_worker);
  CHECK(h.s.task_state("g") == TaskStatus::no_worker);
  CHECK(warnings(h.last).empty());  // a has a GPU: it is only paused
  const auto& out = h.handle(WorkerStatusChanged{"a", false, ""});
  CHECK(sorted(computed(out)) == std::vector<std::string>{"g", "y"});
}

TEST_CASE("stealing: never to a worker lacking the task's resources, nor a task pinned "
          "elsewhere",
          "[scheduler][resources][stealing]") {
  Harness h;
  add_worker_with(h, "a", {{"GPU", 2}});
  h.submit({needing("g1", {{"GPU", 1}}, "slow"), needing("g2", {{"GPU", 1}}, "slow"),
            pinned("p", {"a"})});
  REQUIRE(h.s.processing("a").size() == 3);
  CHECK(only<StealRequest>(h.add_worker("b")).empty());  // no GPU there; p is pinned
  add_worker_with(h, "c", {{"GPU", 1}});
  const auto requests = only<StealRequest>(h.last);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].worker == "a");
  CHECK(requests[0].key != "p");
  h.answer_steal("a", requests[0].key, true);
  CHECK(h.s.processing_on(requests[0].key) == "c");
  CHECK(h.s.worker("c")->used_resources == taskwire::runtime::Resources{{"GPU", 1}});
  CHECK(h.s.worker("a")->used_resources == taskwire::runtime::Resources{{"GPU", 1}});
}

TEST_CASE("stealing: a thief that paused before the victim confirmed does not get the task",
          "[scheduler][resources][stealing]") {
  Harness h;
  add_worker_with(h, "a", {{"GPU", 2}});
  h.submit({needing("g1", {{"GPU", 1}}, "slow"), needing("g2", {{"GPU", 1}}, "slow")});
  add_worker_with(h, "c", {{"GPU", 1}});
  const auto requests = only<StealRequest>(h.last);
  REQUIRE(requests.size() == 1);
  h.handle(WorkerStatusChanged{"c", true, ""});
  const auto& out = h.answer_steal("a", requests[0].key, true);
  const auto sent = only<ComputeTask>(out);
  REQUIRE(sent.size() == 1);  // placed anew: back on a, the one worker that may take it
  CHECK(sent[0].worker == "a");
  CHECK(h.s.processing("c").empty());
}

TEST_CASE("stealing: a paused worker's waiting tasks may go to an idle one",
          "[scheduler][resources][stealing]") {
  Harness h;
  h.add_worker("a", 2);
  h.submit({task("x1", {}, "slow"), task("x2", {}, "slow")});
  REQUIRE(h.s.processing("a").size() == 2);
  CHECK(only<StealRequest>(h.add_worker("b", 1)).empty());  // a runs both: nothing waits
  const auto& out = h.handle(WorkerStatusChanged{"a", true, ""});
  const auto requests = only<StealRequest>(out);
  REQUIRE(requests.size() == 1);  // b has one thread
  CHECK(requests[0].worker == "a");
  h.answer_steal("a", requests[0].key, true);
  CHECK(h.s.processing_on(requests[0].key) == "b");
}
