// Assign ahead across workers: a task whose unfinished inputs run on several workers is sent
// to one of them before they finish, naming where each still-running input runs; its worker
// asks those workers for them, and they answer once done. Losses, errors, steals and a
// producer that did not know its task yet send it back to wait. Every step validates.
#include "tests/scheduler/scheduler_harness.hpp"

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;
using S = TaskStatus;

namespace {

SchedulerOptions across(bool on = true) {
  SchedulerOptions o;
  o.assign_ahead = 1;
  o.assign_ahead_across_workers = on;
  return o;
}

const ComputeTask* compute_of(const Instructions& out, const std::string& key) {
  for (const Instruction& i : out)
    if (const auto* c = std::get_if<ComputeTask>(&i); c && c->key == key) return c;
  return nullptr;
}

const DependencyLocation* location_of(const ComputeTask& c, const std::string& key) {
  for (const auto& d : c.dependencies)
    if (d.key == key) return &d;
  return nullptr;
}

/// p on a, q on b (roots placed one per worker), r needs both.
struct TwoProducers {
  Harness h;
  std::string a = "tcp://a:1", b = "tcp://b:1";
  explicit TwoProducers(SchedulerOptions o = across(), int q_retries = 0) : h(o) {
    h.add_worker(a);
    h.add_worker(b);
    TaskSpec q = task("q");
    q.retries = q_retries;
    h.submit({task("p"), q}, {"p", "q"});
    REQUIRE(h.s.processing_on("p") == a);
    REQUIRE(h.s.processing_on("q") == b);
  }
};

}  // namespace

TEST_CASE("assign ahead across workers: off, a task whose inputs run on two workers waits",
          "[scheduler][assign]") {
  TwoProducers t(across(false));
  CHECK(computed(t.h.submit({task("r", {"p", "q"})}, {"r"})).empty());
  CHECK(t.h.s.task_state("r") == S::waiting);
}

TEST_CASE("assign ahead across workers: the task goes to one producer's worker and names the "
          "other's",
          "[scheduler][assign]") {
  TwoProducers t;
  const auto& out = t.h.submit({task("r", {"p", "q"})}, {"r"});
  const ComputeTask* c = compute_of(out, "r");
  REQUIRE(c);
  CHECK(t.h.s.task_state("r") == S::assigned);
  CHECK(c->worker == t.a);  // equal load: the first by address
  const DependencyLocation* p = location_of(*c, "p");
  const DependencyLocation* q = location_of(*c, "q");
  REQUIRE(p);
  REQUIRE(q);
  CHECK(!p->running);  // runs on r's own worker
  CHECK(p->who_has.empty());
  CHECK(q->running);
  CHECK(q->who_has == std::vector<std::string>{t.b});
  // Both finish; r starts on its worker by itself (no second compute_task).
  CHECK(computed(t.h.finish("q")).empty());
  CHECK(computed(t.h.finish("p")).empty());
  CHECK(t.h.s.task_state("r") == S::processing);
  CHECK(computed(t.h.finish("r")).empty());
  CHECK(t.h.s.task_state("r") == S::memory);
}

TEST_CASE("assign ahead across workers: a stencil's two points of a step go one to each worker",
          "[scheduler][assign]") {
  TwoProducers t;
  const auto& out = t.h.submit({task("r0", {"p", "q"}), task("r1", {"p", "q"})}, {"r0", "r1"});
  const ComputeTask* r0 = compute_of(out, "r0");
  const ComputeTask* r1 = compute_of(out, "r1");
  REQUIRE(r0);
  REQUIRE(r1);
  CHECK(r0->worker != r1->worker);
}

TEST_CASE("assign ahead across workers: a consumer finishing before the scheduler hears of its "
          "remote input keeps its result",
          "[scheduler][assign]") {
  TwoProducers t;
  t.h.submit({task("r", {"p", "q"})}, {"r"});
  t.h.finish("p");
  REQUIRE(t.h.s.task_state("r") == S::assigned);
  // r's worker got q from b and ran r; b's report of q comes later.
  t.h.handle(TaskFinished{t.a, "r", 8, 0.01, "", t.h.s.attempt("r")});
  CHECK(t.h.s.task_state("r") == S::memory);
  t.h.finish("q");
  CHECK(t.h.s.task_state("q") == S::memory);  // the client wants it
  CHECK(t.h.s.task_state("r") == S::memory);
}

TEST_CASE("assign ahead across workers: a remote input that errs, is retried, or whose worker "
          "dies sends the task back to wait and frees it on its worker",
          "[scheduler][assign]") {
  SECTION("erred for good") {
    TwoProducers t;
    t.h.submit({task("r", {"p", "q"})}, {"r"});
    const auto& out = t.h.fail("q");
    CHECK(t.h.s.task_state("r") == S::erred);
    CHECK(freed_on(out, t.a) == std::vector<std::string>{"r"});
  }
  SECTION("retried") {
    TwoProducers t(across(), 1);
    t.h.submit({task("r", {"p", "q"})}, {"r"});
    const auto& out = t.h.fail("q");
    CHECK(freed_on(out, t.a) == std::vector<std::string>{"r"});
    t.h.run_all();
    CHECK(t.h.s.task_state("r") == S::memory);
  }
  SECTION("its worker dies") {
    TwoProducers t;
    t.h.submit({task("r", {"p", "q"})}, {"r"});
    const auto& out = t.h.handle(RemoveWorker{t.b, "lost", false, "", 1.0});
    CHECK(freed_on(out, t.a) == std::vector<std::string>{"r"});
    t.h.run_all();
    CHECK(t.h.s.task_state("r") == S::memory);
  }
}

TEST_CASE("assign ahead across workers: a producer's worker that did not know its input sends "
          "the task back to wait, not counted as a failed fetch, and not ahead across again",
          "[scheduler][assign]") {
  SchedulerOptions o = across();
  o.allowed_fetch_failures = 1;  // one counted failure would err r
  TwoProducers t(o);
  t.h.submit({task("r", {"p", "q"})}, {"r"});
  REQUIRE(t.h.s.processing_on("r") == t.a);
  const auto& out = t.h.handle(MissingData{t.a, "q", t.b, "r", "", true});
  CHECK(t.h.s.task_state("r") == S::waiting);
  CHECK(freed_on(out, t.a) == std::vector<std::string>{"r"});
  CHECK(t.h.s.task_state("q") == S::processing);  // still runs on b
  t.h.finish("p");
  t.h.finish("q");
  REQUIRE(t.h.s.task_state("r") == S::processing);
  t.h.finish("r");
  CHECK(t.h.s.task_state("r") == S::memory);
}

// A stencil's window: every task is below both of the step before. Taken back and sent ahead
// again one at a time, each was sent under one input and taken back under the other, down the
// window: 2^depth instructions (TaskBench's scheduler spun, and here memory ran out).
TEST_CASE("assign ahead across workers: a stencil's window taken back is sent again once",
          "[scheduler][assign]") {
  SchedulerOptions o = across();
  o.assign_ahead = 4;
  TwoProducers t(o);
  std::vector<TaskSpec> steps;
  const int depth = 30;
  const auto key = [](int s, int i) { return fmt::format("s{}-{}", s, i); };
  for (int s = 1; s <= depth; ++s)
    for (int i = 0; i < 2; ++i) {
      const auto in = [&](int j) { return s == 1 ? std::string(j ? "q" : "p") : key(s - 1, j); };
      steps.push_back(task(key(s, i), {in(0), in(1)}));
    }
  t.h.submit(steps, {key(depth, 0), key(depth, 1)});
  t.h.finish("p", 8, 50e-6);
  const auto worker = *t.h.s.processing_on("s1-0");
  // s1-0's worker could not get q from b (b did not know q yet): back to wait, and the tasks
  // assigned below it with it.
  const auto& out = t.h.handle(MissingData{worker, "q", t.b, "s1-0", "", true});
  CHECK(only<ComputeTask>(out).size() <= 2 * depth);
  t.h.run_all();
  CHECK(t.h.s.task_state(key(depth, 0)) == S::memory);
  CHECK(t.h.s.task_state(key(depth, 1)) == S::memory);
}
