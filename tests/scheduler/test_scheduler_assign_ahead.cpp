// Assign ahead: a task whose unfinished inputs all run on one worker is sent there before they
// finish, so that it starts with no scheduler round trip; retries, deaths, stealing, pauses
// and the window keep their meaning. Every step validates the invariants.
#include "tests/scheduler/scheduler_harness.hpp"

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;
using S = TaskStatus;

namespace {

SchedulerOptions ahead() {
  SchedulerOptions o;
  o.assign_ahead = 1;
  return o;
}

TaskSpec retried(TaskSpec t, int retries) {
  t.retries = retries;
  return t;
}

}  // namespace

TEST_CASE("assign ahead: a chain on one worker is sent a link ahead, and never sent twice",
          "[scheduler][assign]") {
  Harness h(ahead());
  h.add_worker("tcp://a:1");
  const auto& out = h.submit({task("x"), task("y", {"x"}), task("z", {"y"})}, {"z"});
  CHECK(computed(out) == std::vector<std::string>{"x", "y"});
  CHECK(h.s.task_state("y") == S::assigned);
  CHECK(h.s.task_state("z") == S::waiting);  // the window (1 a thread) is full
  CHECK(h.s.processing_on("y") == "tcp://a:1");
  // x finishes: y already runs on the worker; z goes ahead of it.
  CHECK(computed(h.finish("x")) == std::vector<std::string>{"z"});
  CHECK(h.s.task_state("y") == S::processing);
  CHECK(h.s.task_state("z") == S::assigned);
  CHECK(computed(h.finish("y")).empty());
  CHECK(computed(h.finish("z")).empty());
  CHECK(h.s.task_state("z") == S::memory);
  CHECK(h.s.task_counts().completed == 3);
}

TEST_CASE("assign ahead: a slot that comes free is refilled several links down a chain",
          "[scheduler][assign]") {
  SchedulerOptions o;
  o.assign_ahead = 2;
  Harness h(o);
  h.add_worker("tcp://a:1");
  h.submit({task("w"), task("x", {"w"}), task("y", {"x"}), task("z", {"y"})}, {"z"});
  CHECK(h.s.task_state("x") == S::assigned);
  CHECK(h.s.task_state("y") == S::assigned);
  CHECK(h.s.task_state("z") == S::waiting);  // the window (2 a thread) is full
  // w finishes: x leaves the window; z, two links down, takes its slot at once rather than
  // once y finishes (one link ahead of the work).
  CHECK(computed(h.finish("w", 8, 1.0)) == std::vector<std::string>{"z"});
  CHECK(h.s.task_state("z") == S::assigned);
}

TEST_CASE("assign ahead: known-short tasks get a window that covers a round trip",
          "[scheduler][assign]") {
  for (const double seconds : {10e-3, 10e-6}) {
    INFO("tasks of " << seconds << " s");
    Harness h(ahead());  // 1 task a thread, or short_task_cover_seconds (2 ms) of them
    h.add_worker("tcp://a:1");
    h.submit({task("warm")}, {"warm"});
    h.finish("warm", 8, seconds);  // the scheduler learns how long "inc" takes
    const auto link = [](int i) { return fmt::format("c{}", i); };
    std::vector<TaskSpec> chain{task(link(0))};
    for (int i = 1; i < 10; ++i) chain.push_back(task(link(i), {link(i - 1)}));
    h.submit(chain, {link(9)});
    int assigned = 0;
    for (int i = 1; i < 10; ++i) assigned += h.s.task_state(link(i)) == S::assigned;
    CHECK(assigned == (seconds < 1e-3 ? 9 : 1));
  }
}

TEST_CASE("assign ahead: off, a dependent waits for its input to finish", "[scheduler][assign]") {
  SchedulerOptions o;
  o.assign_ahead = 0;
  Harness h(o);
  h.add_worker("tcp://a:1");
  CHECK(computed(h.submit({task("x"), task("y", {"x"})}, {"y"})) == std::vector<std::string>{"x"});
  CHECK(computed(h.finish("x")) == std::vector<std::string>{"y"});
}

TEST_CASE("assign ahead: inputs on two workers, or in memory elsewhere and running here",
          "[scheduler][assign]") {
  Harness h(ahead());
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  h.submit({task("p"), task("q")}, {"p", "q"});
  REQUIRE(h.s.processing_on("p") != h.s.processing_on("q"));
  // r needs both: they run on different workers, so it waits.
  h.submit({task("r", {"p", "q"})}, {"r"});
  CHECK(h.s.task_state("r") == S::waiting);
  // Once p is in memory, r's only unfinished input runs on q's worker: r goes there ahead
  // (p's worker idles then, which holds back only tasks longer than 100 us: p took 10 us).
  const auto q_worker = *h.s.processing_on("q");
  const auto& out = h.finish("p", 8, 10e-6);
  CHECK(computed(out) == std::vector<std::string>{"r"});
  CHECK(h.s.task_state("r") == S::assigned);
  CHECK(h.s.processing_on("r") == q_worker);
  h.finish("q");
  CHECK(h.s.task_state("r") == S::processing);
}

// The stencil's lesson (docs/assign-ahead.md): a task sent ahead cannot be stolen, so a long one
// waits rather than queue behind a busy worker while another idles; a short one goes ahead
// all the same (moving it would cost more than it runs).
TEST_CASE("assign ahead: with another worker idle only a short task goes ahead",
          "[scheduler][assign]") {
  for (const double seconds : {10e-3, 10e-6}) {
    INFO("tasks of " << seconds << " s");
    Harness h(ahead());
    h.add_worker("tcp://a:1");
    h.submit({task("warm")}, {"warm"});
    h.finish("warm", 8, seconds);  // the scheduler learns how long "inc" takes
    h.add_worker("tcp://b:1");
    h.submit({task("x"), task("y", {"x"})}, {"y"});
    const auto x_on = *h.s.processing_on("x");
    REQUIRE(h.s.processing(x_on == "tcp://a:1" ? "tcp://b:1" : "tcp://a:1").empty());
    CHECK(h.s.task_state("y") == (seconds < 100e-6 ? S::assigned : S::waiting));
    h.finish("x", 8, seconds);
    CHECK(h.s.task_state("y") == S::processing);
  }
}

TEST_CASE("assign ahead: a retried input sends its dependent back to wait for the retry",
          "[scheduler][assign]") {
  Harness h(ahead());
  h.add_worker("tcp://a:1");
  h.submit({retried(task("x"), 1), task("y", {"x"})}, {"y"});
  REQUIRE(h.s.task_state("y") == S::assigned);
  const auto& out = h.fail("x");
  CHECK(only<ReportTaskErred>(out).empty());  // nothing erred: x runs again
  CHECK(sorted(freed_on(out, "tcp://a:1")) == std::vector<std::string>{"x", "y"});
  CHECK(computed(out) == std::vector<std::string>{"x", "y"});  // x again, y ahead of it again
  CHECK(h.s.task_state("y") == S::assigned);
  h.finish("x");
  h.finish("y");
  CHECK(h.s.task_state("y") == S::memory);
}

TEST_CASE("assign ahead: an input that fails for good fails its assigned dependent",
          "[scheduler][assign]") {
  Harness h(ahead());
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"})}, {"y"});
  REQUIRE(h.s.task_state("y") == S::assigned);
  const auto& out = h.fail("x");
  CHECK(h.s.task_state("y") == S::erred);
  CHECK(keys_of(only<ReportTaskErred>(out)) == std::vector<std::string>{"y"});
  CHECK(sorted(freed_on(out, "tcp://a:1")) == std::vector<std::string>{"x", "y"});
}

TEST_CASE("assign ahead: a task assigned ahead that errs on its worker is retried or erred",
          "[scheduler][assign]") {
  Harness h(ahead());
  h.add_worker("tcp://a:1");
  h.submit({task("x"), retried(task("y", {"x"}), 1)}, {"y"});
  REQUIRE(h.s.task_state("y") == S::assigned);
  // The worker refused y at once (an unknown function, say): it waits for x, to try again.
  h.handle(TaskErred{"tcp://a:1", "y", "no such function", "", "", h.s.attempt("y")});
  CHECK(h.s.task_state("y") == S::assigned);  // placed ahead again, at once
  h.handle(TaskErred{"tcp://a:1", "y", "no such function", "", "", h.s.attempt("y")});
  CHECK(h.s.task_state("y") == S::erred);
}

TEST_CASE("assign ahead: a dead worker's assigned tasks are placed again with their inputs",
          "[scheduler][assign]") {
  Harness h(ahead());
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"})}, {"y"});
  REQUIRE(h.s.task_state("y") == S::assigned);
  h.add_worker("tcp://b:1");
  h.handle(RemoveWorker{"tcp://a:1", "killed", false, "", 1.0});
  CHECK(h.s.processing_on("x") == "tcp://b:1");
  CHECK(h.s.task_state("y") == S::assigned);
  CHECK(h.s.processing_on("y") == "tcp://b:1");
  h.finish("x");
  h.finish("y");
  CHECK(h.s.task_state("y") == S::memory);
}

TEST_CASE("assign ahead: an assigned task whose input dies with its worker for good errs",
          "[scheduler][assign]") {
  SchedulerOptions o = ahead();
  o.allowed_failures = 1;
  Harness h(o);
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"})}, {"y"});
  REQUIRE(h.s.task_state("y") == S::assigned);
  h.add_worker("tcp://b:1");
  // x killed the one worker it may kill: it errs, and y, sent back to wait, errs with it.
  const auto& out = h.handle(RemoveWorker{"tcp://a:1", "killed", false, "", 1.0});
  CHECK(h.s.task_state("y") == S::erred);
  CHECK(keys_of(only<ReportTaskErred>(out)) == std::vector<std::string>{"y"});
}

TEST_CASE("assign ahead: a task sent back to wait stays among its running input's waiters",
          "[scheduler][assign]") {
  SchedulerOptions o = ahead();
  o.assign_ahead = 2;
  Harness h(o);
  h.add_worker("tcp://a:1");
  h.submit({task("w"), retried(task("x", {"w"}), 1), task("y", {"x"}), task("z", {"y"})},
           {"z"});
  REQUIRE(h.s.task_state("x") == S::assigned);
  REQUIRE(h.s.task_state("y") == S::assigned);
  h.finish("w");
  // x fails once and is retried: y and z, assigned behind it, wait again and follow it.
  h.fail("x");
  CHECK(h.s.task_state("x") == S::processing);
  CHECK(h.s.task_state("y") == S::assigned);
  h.finish("x");
  h.finish("y");
  h.finish("z");
  CHECK(h.s.task_state("z") == S::memory);
}

TEST_CASE("assign ahead: assigned tasks are never stolen, nor counted as a backlog",
          "[scheduler][assign]") {
  Harness h(ahead());
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"})}, {"y"});
  REQUIRE(h.s.task_state("y") == S::assigned);
  const auto& out = h.add_worker("tcp://b:1");  // idle: a thief, if anything could be stolen
  CHECK(only<StealRequest>(out).empty());
}

TEST_CASE("assign ahead: the window bounds a fan-out, and a paused worker gets none",
          "[scheduler][assign]") {
  Harness h(ahead());
  h.add_worker("tcp://a:1", 2);
  h.submit({task("x"), task("y1", {"x"}), task("y2", {"x"}), task("y3", {"x"}),
            task("y4", {"x"})},
           {"y1", "y2", "y3", "y4"});
  int assigned = 0;
  for (const char* k : {"y1", "y2", "y3", "y4"}) assigned += h.s.task_state(k) == S::assigned;
  CHECK(assigned == 2);  // 1 a thread, 2 threads

  Harness p(ahead());
  p.add_worker("tcp://a:1");
  p.submit({task("x")}, {"x"});
  p.handle(WorkerStatusChanged{"tcp://a:1", true, ""});
  p.submit({task("y", {"x"})}, {"y"});
  CHECK(p.s.task_state("y") == S::waiting);
}
