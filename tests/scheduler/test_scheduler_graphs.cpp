// Graph submission, placement, queuing, completion and release.
#include "scheduler_harness.hpp"

#include <chrono>
#include <limits>

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;
using S = TaskStatus;

TEST_CASE("scheduler: a root task runs on the only worker and the client is told", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  const auto& out = h.submit({task("x")});
  const auto compute = only<ComputeTask>(out);
  REQUIRE(compute.size() == 1);
  CHECK(compute[0].worker == "tcp://a:1");
  CHECK(compute[0].key == "x");
  CHECK(compute[0].function == "inc");
  CHECK(compute[0].dependencies.empty());
  CHECK(h.s.task_state("x") == S::processing);
  CHECK(h.s.processing("tcp://a:1") == std::vector<std::string>{"x"});

  const auto& done = h.finish("x", 123);
  const auto reports = only<ReportKeyInMemory>(done);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].client == "c1");
  CHECK(reports[0].key == "x");
  CHECK(reports[0].nbytes == 123);
  CHECK(h.s.task_state("x") == S::memory);
  CHECK(h.s.who_has("x") == std::vector<std::string>{"tcp://a:1"});
  CHECK(h.s.nbytes("x") == 123);
}

TEST_CASE("scheduler: a task waits until its dependencies are in memory", "[scheduler]") {
  Harness h(waiting_for_inputs());
  h.add_worker("tcp://a:1");
  CHECK(computed(h.submit({task("a"), task("b", {"a"})}, {"b"})) == std::vector<std::string>{"a"});
  CHECK(h.s.task_state("b") == S::waiting);

  const auto compute = only<ComputeTask>(h.finish("a", 40));
  REQUIRE(compute.size() == 1);
  CHECK(compute[0].key == "b");
  REQUIRE(compute[0].dependencies.size() == 1);
  CHECK(compute[0].dependencies[0].key == "a");
  CHECK(compute[0].dependencies[0].nbytes == 40);
  CHECK(compute[0].dependencies[0].who_has == std::vector<std::string>{"tcp://a:1"});
  CHECK(only<ReportKeyInMemory>(h.last).empty());  // nobody wants "a" itself
}

TEST_CASE("scheduler: a diamond graph runs each task once, in dependency order", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  h.submit({task("a"), task("b", {"a"}), task("c", {"a"}), task("d", {"b", "c"})}, {"d"});
  const auto order = h.run_all();
  REQUIRE(order.size() == 4);
  CHECK(order.front() == "a");
  CHECK(order.back() == "d");
  CHECK(h.s.task_state("d") == S::memory);
  // Intermediate results are released once d holds its own; their records stay (d depends
  // on them) until d is released.
  for (const char* key : {"a", "b", "c"}) CHECK(h.s.task_state(key) == S::released);
  CHECK(h.s.task_count() == 4);
  h.release({"d"});
  CHECK(h.s.task_count() == 0);
}

TEST_CASE("scheduler: a fan-in task runs once all of its 100 inputs are in memory", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1", 4);
  h.add_worker("tcp://b:1", 4);
  std::vector<TaskSpec> tasks;
  std::vector<std::string> inputs;
  for (int i = 0; i < 100; ++i) {
    inputs.push_back(fmt::format("in-{}", i));
    tasks.push_back(task(inputs.back()));
  }
  tasks.push_back(task("sum", inputs, "sum"));
  h.submit(tasks, {"sum"});
  const auto order = h.run_all();
  REQUIRE(order.size() == 101);
  CHECK(order.back() == "sum");
  CHECK(h.s.task_state("sum") == S::memory);
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

TEST_CASE("scheduler: 10,000-task graphs run to completion and are forgotten when released",
          "[scheduler]") {
  Harness h;
  for (int w = 0; w < 4; ++w) h.add_worker(fmt::format("tcp://w{}:1", w), 2);
  const auto start = std::chrono::steady_clock::now();
  std::vector<TaskSpec> tasks;
  std::string tip;
  SECTION("a tree reduction of 5,000 leaves") {
    std::vector<std::string> level;
    for (int i = 0; i < 5000; ++i) {
      level.push_back(fmt::format("leaf-{}", i));
      tasks.push_back(task(level.back()));
    }
    for (int depth = 0; level.size() > 1; ++depth) {
      std::vector<std::string> next;
      for (std::size_t i = 0; i < level.size(); i += 2) {
        std::vector<std::string> deps{level[i]};
        if (i + 1 < level.size()) deps.push_back(level[i + 1]);
        next.push_back(fmt::format("add-{}-{}", depth, i / 2));
        tasks.push_back(task(next.back(), deps, "add"));
      }
      level = std::move(next);
    }
    tip = level.front();
  }
  SECTION("a chain of 10,000 links") {
    for (int i = 0; i < 10000; ++i) {
      tasks.push_back(i ? task(fmt::format("link-{}", i), {fmt::format("link-{}", i - 1)})
                        : task("link-0"));
    }
    tip = tasks.back().key;
  }
  SECTION("a fan-out of 10,000 from one key, summed up") {
    tasks.push_back(task("root"));
    std::vector<std::string> mids;
    for (int i = 0; i < 10000; ++i) {
      mids.push_back(fmt::format("mid-{}", i));
      tasks.push_back(task(mids.back(), {"root"}));
    }
    tasks.push_back(task("total", mids, "sum"));
    tip = "total";
  }
  const std::size_t n = tasks.size();
  h.submit(std::move(tasks), {tip});
  const auto order = h.run_all();
  CHECK(order.size() == n);
  CHECK(h.s.task_state(tip) == S::memory);
  CHECK(h.s.validate() == "");
  h.release({tip});
  CHECK(h.s.task_count() == 0);
  const double elapsed = seconds_since(start);
  INFO(n << " tasks took " << elapsed << " s");
  CHECK(elapsed < 20.0);  // quadratic behaviour would take minutes
}

TEST_CASE(
    "scheduler: a task with two deps on different workers goes to the one holding more "
    "bytes",
    "[scheduler]") {
  Harness h({.worker_saturation = std::numeric_limits<double>::infinity()});
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  h.submit({task("big"), task("small")});
  REQUIRE(h.s.processing_on("big") != h.s.processing_on("small"));
  const std::string big_holder = *h.s.processing_on("big");
  h.finish("big", 1'000'000);
  h.finish("small", 10);
  const auto compute = only<ComputeTask>(h.submit({task("both", {"big", "small"})}));
  REQUIRE(compute.size() == 1);
  CHECK(compute[0].worker == big_holder);
}

TEST_CASE("scheduler: between workers holding equal bytes, the less occupied one gets the task",
          "[scheduler]") {
  Harness h({.worker_saturation = std::numeric_limits<double>::infinity()});
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  h.submit({task("x"), task("y")});
  h.finish("x", 100);
  h.finish("y", 100);
  const std::string x_holder = *h.s.who_has("x").begin();
  const std::string y_holder = *h.s.who_has("y").begin();
  REQUIRE(x_holder != y_holder);
  h.submit({task("slow", {}, "sleep")});  // lands on one of them: keeps it busy
  const std::string busy = *h.s.processing_on("slow");
  const auto compute = only<ComputeTask>(h.submit({task("z", {"x", "y"})}));
  REQUIRE(compute.size() == 1);
  CHECK(compute[0].worker != busy);
}

TEST_CASE("scheduler: a busy holder of a small dependency loses its dependents to idle workers",
          "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  h.submit({task("x")});
  h.finish("x", 8);
  std::vector<TaskSpec> dependents;
  for (int i = 0; i < 10; ++i) dependents.push_back(task(fmt::format("y-{}", i), {"x"}));
  const auto compute = only<ComputeTask>(h.submit(dependents));
  REQUIRE(compute.size() == 10);
  int on_a = 0;
  for (const auto& c : compute) on_a += c.worker == "tcp://a:1";
  CHECK(on_a == 5);  // both workers get half: fetching 8 bytes beats queueing behind 0.5 s
}

TEST_CASE("scheduler: root tasks beyond ceil(nthreads * 1.1) per worker wait in the queue",
          "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1", 2);  // ceil(2 * 1.1) = 3 slots
  std::vector<TaskSpec> roots;
  for (int i = 0; i < 10; ++i) roots.push_back(task(fmt::format("r{}", i)));
  CHECK(computed(h.submit(roots)) == std::vector<std::string>{"r0", "r1", "r2"});
  CHECK(h.s.queued_count() == 7);
  CHECK(h.s.task_state("r3") == S::queued);
  // Each completion opens one slot, filled in priority order.
  CHECK(computed(h.finish("r1")) == std::vector<std::string>{"r3"});
  CHECK(computed(h.finish("r0")) == std::vector<std::string>{"r4"});
  CHECK(h.s.processing("tcp://a:1") == std::vector<std::string>{"r2", "r3", "r4"});
}

TEST_CASE("scheduler: known-short root tasks get enough slots to cover a round trip",
          "[scheduler]") {
  std::vector<TaskSpec> roots;
  for (int i = 0; i < 40; ++i) roots.push_back(task(fmt::format("r{}", i)));
  auto processing_after_first = [&](SchedulerOptions options, double duration) {
    Harness h(options);
    h.add_worker("tcp://a:1", 2);
    CHECK(computed(h.submit(roots)).size() == 3);  // duration unknown: ceil(2 * 1.1)
    h.finish("r0", 8, duration);
    CHECK(h.s.validate().empty());
    return h.s.processing("tcp://a:1").size();
  };
  const SchedulerOptions cover{.short_task_cover_seconds = 0.5, .max_short_task_slots = 8};
  // 0.5 s each covers 0.5 s with 1 task per thread: no more than worker_saturation gives.
  CHECK(processing_after_first(cover, 0.5) == 3);
  // 0.125 s each: 4 per thread.
  CHECK(processing_after_first(cover, 0.125) == 8);
  // Microseconds each: capped at 8 per thread.
  CHECK(processing_after_first(cover, 1e-6) == 16);
  // 0 disables it.
  CHECK(processing_after_first({.short_task_cover_seconds = 0}, 1e-6) == 3);
}

TEST_CASE("scheduler: ready dependents run before more queued root tasks", "[scheduler]") {
  Harness h(waiting_for_inputs());
  h.add_worker("tcp://a:1");  // 2 slots
  h.submit({task("r0"), task("r1"), task("r2"), task("d0", {"r0"})});
  CHECK(h.s.task_state("r2") == S::queued);
  CHECK(computed(h.finish("r0")) == std::vector<std::string>{"d0"});
  CHECK(h.s.task_state("r2") == S::queued);  // the freed slot went to d0
}

TEST_CASE("scheduler: queued root tasks go to the least loaded worker", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1", 2);
  std::vector<TaskSpec> roots;
  for (int i = 0; i < 10; ++i) roots.push_back(task(fmt::format("r{}", i)));
  const auto compute = only<ComputeTask>(h.submit(roots));
  REQUIRE(compute.size() == 5);  // 2 slots on a, 3 on b
  CHECK(h.s.processing("tcp://a:1").size() == 2);
  CHECK(h.s.processing("tcp://b:1").size() == 3);
  CHECK(compute[0].worker == "tcp://a:1");  // ties go by address
  CHECK(compute[1].worker == "tcp://b:1");
}

TEST_CASE("scheduler: without workers, ready tasks wait and run when a worker joins",
          "[scheduler]") {
  SECTION("queued, with queuing") {
    Harness h;
    CHECK(computed(h.submit({task("x")})).empty());
    CHECK(h.s.task_state("x") == S::queued);
    const auto compute = only<ComputeTask>(h.add_worker("tcp://a:1"));
    REQUIRE(compute.size() == 1);
    CHECK(compute[0].key == "x");
  }
  SECTION("no-worker, without queuing") {
    Harness h({.worker_saturation = std::numeric_limits<double>::infinity()});
    h.submit({task("x"), task("y")});
    CHECK(h.s.task_state("x") == S::no_worker);
    CHECK(h.s.no_worker_count() == 2);
    CHECK(computed(h.add_worker("tcp://a:1")) == std::vector<std::string>{"x", "y"});
  }
}

TEST_CASE("scheduler: a worker joining while work runs gets work at once", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  std::vector<TaskSpec> roots;
  for (int i = 0; i < 6; ++i) roots.push_back(task(fmt::format("r{}", i)));
  h.submit(roots);
  CHECK(h.s.queued_count() == 4);
  const auto compute = only<ComputeTask>(h.add_worker("tcp://b:1"));
  REQUIRE(compute.size() == 2);
  for (const auto& c : compute) CHECK(c.worker == "tcp://b:1");
  CHECK(keys_of(compute) == std::vector<std::string>{"r2", "r3"});
}

TEST_CASE("scheduler: occupancy follows the durations reported per function", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  CHECK(h.s.expected_duration("inc") == Approx(0.5));
  h.submit({task("x")});
  CHECK(h.s.worker("tcp://a:1")->occupancy == Approx(0.5));
  h.finish("x", 8, 0.1);
  CHECK(h.s.expected_duration("inc") == Approx(0.1));
  h.submit({task("y")});
  h.finish("y", 8, 0.3);
  CHECK(h.s.expected_duration("inc") == Approx(0.2));
  h.submit({task("z1"), task("z2")});
  CHECK(h.s.worker("tcp://a:1")->occupancy == Approx(0.4));
}

TEST_CASE("scheduler: released keys are forgotten and freed where they are held", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"})});
  h.run_all();
  CHECK(h.s.task_state("x") == S::memory);  // wanted by the client
  h.release({"y"});
  CHECK(freed_on(h.last, "tcp://a:1") == std::vector<std::string>{"y"});
  CHECK(keys_of(only<DropTaskSpec>(h.last)) == std::vector<std::string>{"y"});
  CHECK_FALSE(h.s.contains("y"));
  CHECK(h.s.task_count() == 1);
  h.release({"x"});
  CHECK(freed_on(h.last, "tcp://a:1") == std::vector<std::string>{"x"});
  CHECK_FALSE(h.s.contains("x"));
  CHECK(h.s.task_count() == 0);
  CHECK(h.s.has_what("tcp://a:1").empty());
  CHECK(h.s.worker("tcp://a:1")->nbytes == 0);
}

TEST_CASE("scheduler: a result from a worker that was not running it is freed there, and "
          "releasing a key frees its holder", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  h.submit({task("x")});
  const std::string ran = *h.s.processing_on("x");
  const std::string other = ran == "tcp://a:1" ? "tcp://b:1" : "tcp://a:1";
  const auto attempt = h.s.attempt("x");
  h.finish("x");
  // A report from the other worker (an earlier run of the key there, say) is no replica.
  h.handle(TaskFinished{other, "x", 8, 0.01, "", attempt});
  CHECK(freed_on(h.last, other) == std::vector<std::string>{"x"});
  CHECK(h.s.who_has("x") == std::vector<std::string>{ran});
  h.release({"x"});
  CHECK(freed_on(h.last, ran) == std::vector<std::string>{"x"});
  // A result reported for a key nobody holds any more is freed at once.
  h.handle(TaskFinished{other, "x", 8, 0.01, "", attempt});
  CHECK(freed_on(h.last, other) == std::vector<std::string>{"x"});
}

TEST_CASE("scheduler: a report of an earlier attempt on the same worker is not taken for the "
          "current one", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x")});
  const auto first = h.s.attempt("x");
  // The client lets go while x runs (free-keys to a), then wants it again: a runs it again.
  h.release({"x"});
  h.handle(ThreadsBusy{"tcp://a:1", 0, ""});  // its answer: that run had ended
  h.submit({task("x")});
  REQUIRE(h.s.processing_on("x") == "tcp://a:1");
  const auto second = h.s.attempt("x");
  CHECK(second != first);
  // a finished the first run before its free-keys came, and dropped that result then.
  h.handle(TaskFinished{"tcp://a:1", "x", 8, 0.01, "", first});
  CHECK(h.s.task_state("x") == S::processing);  // not in memory: a holds nothing yet
  CHECK(freed_on(h.last, "tcp://a:1").empty());  // nor freed: that would drop the second run
  h.handle(TaskErred{"tcp://a:1", "x", "an error of the first run", "", "", first});
  CHECK(h.s.task_state("x") == S::processing);
  h.handle(TaskFinished{"tcp://a:1", "x", 8, 0.01, "", second});
  CHECK(h.s.task_state("x") == S::memory);
  CHECK(h.s.who_has("x") == std::vector<std::string>{"tcp://a:1"});
}

TEST_CASE("scheduler: a released key still needed by a waiting dependent is kept", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"}), task("z")});  // y waits for x, z is queued
  h.finish("x");
  REQUIRE(h.s.task_state("y") == S::processing);
  h.release({"x"});
  CHECK(h.s.task_state("x") == S::memory);  // y still needs it
  h.finish("y");
  CHECK(h.s.task_state("x") == S::released);
  CHECK(freed_on(h.last, "tcp://a:1") == std::vector<std::string>{"x"});
}

TEST_CASE("scheduler: releasing a running key frees it on its worker", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x")});
  h.release({"x"});
  CHECK(freed_on(h.last, "tcp://a:1") == std::vector<std::string>{"x"});
  CHECK(h.s.task_count() == 0);
  // The worker finishes it anyway: it is told again to drop the result.
  h.handle(TaskFinished{"tcp://a:1", "x", 8, 0.1, "", 1});
  CHECK(freed_on(h.last, "tcp://a:1") == std::vector<std::string>{"x"});
  CHECK(h.s.task_count() == 0);
}

TEST_CASE("scheduler: a key wanted by two clients lives until both release it", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x")}, {"x"}, "c1");
  const auto& again = h.submit({task("x")}, {"x"}, "c2");
  CHECK(computed(again).empty());
  h.finish("x");
  CHECK(sorted({only<ReportKeyInMemory>(h.last)[0].client,
                only<ReportKeyInMemory>(h.last)[1].client}) ==
        std::vector<std::string>{"c1", "c2"});
  h.release({"x"}, "c1");
  CHECK(h.s.task_state("x") == S::memory);
  h.release({"x"}, "c2");
  CHECK_FALSE(h.s.contains("x"));
}

TEST_CASE("scheduler: a key already in memory is reported at once to a new client", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x")}, {"x"}, "c1");
  h.finish("x", 5);
  const auto reports = only<ReportKeyInMemory>(h.submit({task("x")}, {"x"}, "c2"));
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].client == "c2");
  CHECK(h.s.wanted_by("c2") == std::vector<std::string>{"x"});
}

TEST_CASE("scheduler: a client that disconnects releases everything it wanted", "[scheduler]") {
  Harness h(waiting_for_inputs());
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"})});
  h.handle(RemoveClient{"c1", ""});
  CHECK(h.s.task_count() == 0);
  CHECK(freed_on(h.last, "tcp://a:1") == std::vector<std::string>{"x"});
}
