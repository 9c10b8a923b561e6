// Retiring a worker in the scheduler state machine (RetireWorker): nothing new goes there,
// what it has not started is asked back, its only copies are copied elsewhere, and it is
// closed without rejoining once it runs and keeps nothing; nothing is recomputed.
#include "tests/scheduler/scheduler_harness.hpp"

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;

namespace {

/// Worker a, alone, computes x (the only copy).
void one_result_on_a(Harness& h) {
  h.add_worker("a");
  h.submit({task("x")});
  h.finish("x");
}

/// Worker a computes x and y (the only copies), then b joins.
void two_results_on_a(Harness& h) {
  h.add_worker("a");
  h.submit({task("x"), task("y")});
  h.finish("x");
  h.finish("y");
  h.add_worker("b");
  REQUIRE(h.s.who_has("x") == std::vector<std::string>{"a"});
}
}  // namespace

TEST_CASE("retirement: the only copies go to another worker, then the worker closes",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  two_results_on_a(h);
  auto out = h.handle(RetireWorker{"a", "lifetime", ""});
  REQUIRE(replicas_asked(out, "b") == std::vector<std::string>{"x", "y"});
  const auto asked = only<AcquireReplicas>(out);
  CHECK(asked[0].keys[0].who_has == std::vector<std::string>{"a"});
  CHECK(only<CloseWorker>(out).empty());  // not before b holds them
  CHECK(h.s.worker("a")->retiring);

  out = h.handle(AddKeys{"b", {"x"}, ""});
  CHECK(only<CloseWorker>(out).empty());  // y is still only on a
  out = h.handle(AddKeys{"b", {"y"}, ""});
  const auto closed = only<CloseWorker>(out);
  REQUIRE(closed.size() == 1);
  CHECK(closed[0].worker == "a");
  CHECK_FALSE(closed[0].rejoin);
  CHECK_FALSE(h.s.worker("a"));
  CHECK(h.s.who_has("x") == std::vector<std::string>{"b"});
  CHECK(h.s.who_has("y") == std::vector<std::string>{"b"});
  CHECK(h.s.task_state("x") == TaskStatus::memory);
  CHECK(only<ReportKeyLost>(out).empty());
  CHECK(h.s.task_counts().lost == 0);
  CHECK(h.s.task_counts().completed == 2);
  CHECK(h.s.task_counts().workers_retired == 1);
}

TEST_CASE("retirement: tasks not started are asked back and placed elsewhere, and a running one "
          "finishes there and its result is copied",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  h.add_worker("a");
  h.submit({task("x1", {}, "slow"), task("x2", {}, "slow")});
  REQUIRE(h.s.processing("a") == std::vector<std::string>{"x1", "x2"});
  h.add_worker("b", 1);
  auto out = h.handle(RetireWorker{"a", "", ""});
  const auto asked = only<StealRequest>(out);
  REQUIRE(keys_of(asked) == std::vector<std::string>{"x1", "x2"});
  CHECK(asked[0].worker == "a");

  out = h.answer_steal("a", "x2", true);
  REQUIRE(only<ComputeTask>(out).size() == 1);
  CHECK(only<ComputeTask>(out)[0].worker == "b");
  out = h.answer_steal("a", "x1", false);  // it runs there
  CHECK(only<StealRequest>(out).empty());    // and is not asked for again
  CHECK(h.s.processing_on("x1") == "a");

  out = h.finish("x1");
  CHECK(replicas_asked(out, "b") == std::vector<std::string>{"x1"});
  CHECK(only<CloseWorker>(out).empty());
  out = h.handle(AddKeys{"b", {"x1"}, ""});
  CHECK(only<CloseWorker>(out).size() == 1);
  h.finish("x2");
  CHECK(h.s.task_counts().completed == 2);
  CHECK(h.s.task_counts().lost == 0);
}

TEST_CASE("retirement: nothing new goes to a retiring worker, not even the dependents of "
          "the data it holds",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  two_results_on_a(h);
  h.handle(RetireWorker{"a", "", ""});
  const auto& out = h.submit({task("z", {"x", "y"}), task("r1"), task("r2"), task("r3")});
  for (const ComputeTask& c : only<ComputeTask>(out)) CHECK(c.worker == "b");
  CHECK(h.s.processing("a").empty());
  CHECK(h.s.processing_on("z") == "b");
}

TEST_CASE("retirement: a worker that runs and keeps nothing closes at once, even alone",
          "[scheduler][retirement]") {
  Harness h;
  h.add_worker("a");
  const auto& out = h.handle(RetireWorker{"a", "", ""});
  REQUIRE(only<CloseWorker>(out).size() == 1);
  CHECK(h.s.workers().empty());
}

TEST_CASE("retirement: with no other worker it waits, and copies once one joins",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  h.add_worker("a");
  h.submit({task("x")});
  h.finish("x");
  auto out = h.handle(RetireWorker{"a", "", ""});
  CHECK(only<AcquireReplicas>(out).empty());
  CHECK(only<CloseWorker>(out).empty());
  out = h.handle(CheckHeartbeats{10, 0, ""});
  CHECK(only<CloseWorker>(out).empty());
  out = h.add_worker("b");
  CHECK(replicas_asked(out, "b") == std::vector<std::string>{"x"});
  out = h.handle(AddKeys{"b", {"x"}, ""});
  CHECK(only<CloseWorker>(out).size() == 1);
}

TEST_CASE("retirement: the copies go to the worker holding the fewest bytes, and to another "
          "one if it leaves",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  h.add_worker("a");
  h.submit({task("x")});
  h.finish("x", 100);
  h.add_worker("b");
  TaskSpec big = task("big");
  big.workers = {"b"};
  h.submit({big});
  REQUIRE(h.s.processing_on("big") == "b");
  h.finish("big", 1000000);
  h.add_worker("c");
  auto out = h.handle(RetireWorker{"a", "", ""});
  REQUIRE(replicas_asked(out, "c") == std::vector<std::string>{"x"});
  out = h.handle(RemoveWorker{"c", "connection lost", false, "", 1});
  CHECK(replicas_asked(out, "b") == std::vector<std::string>{"x"});
  out = h.handle(AddKeys{"c", {"x"}, ""});  // stale: c is gone
  CHECK(only<CloseWorker>(out).empty());
  out = h.handle(AddKeys{"b", {"x"}, ""});
  CHECK(only<CloseWorker>(out).size() == 1);
  CHECK(h.s.task_counts().lost == 0);
}

TEST_CASE("retirement: a retiring worker lost before it is done loses its only copies as "
          "any lost worker does",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  two_results_on_a(h);
  h.handle(RetireWorker{"a", "", ""});
  const auto& out = h.handle(RemoveWorker{"a", "worker closing", true, "", 1});
  CHECK(sorted(computed(out)) == std::vector<std::string>{"x", "y"});  // recomputed on b
  CHECK(h.s.task_counts().lost == 2);
}

TEST_CASE("retirement: a key released while its copy is on its way is freed where it lands",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  two_results_on_a(h);
  h.handle(RetireWorker{"a", "", ""});
  h.release({"x"});
  auto out = h.handle(AddKeys{"b", {"x", "y"}, ""});
  CHECK(freed_on(out, "b") == std::vector<std::string>{"x"});
  CHECK(only<CloseWorker>(out).size() == 1);
  CHECK(h.s.who_has("y") == std::vector<std::string>{"b"});
}

TEST_CASE("retirement: assigned-ahead tasks are asked back once they may start",
          "[scheduler][retirement]") {
  SchedulerOptions o = without_stealing();
  Harness h(o);
  h.add_worker("a");
  h.submit({task("x", {}, "slow"), task("y", {"x"}, "slow")});
  REQUIRE(h.s.task_state("y") == TaskStatus::assigned);
  h.add_worker("b");
  auto out = h.handle(RetireWorker{"a", "", ""});
  CHECK(keys_of(only<StealRequest>(out)) == std::vector<std::string>{"x"});
  out = h.answer_steal("a", "x", false);  // x runs there
  out = h.finish("x");
  // y may start on a now: asked back, and x's result copied to b.
  CHECK(keys_of(only<StealRequest>(out)) == std::vector<std::string>{"y"});
  CHECK(replicas_asked(out, "b") == std::vector<std::string>{"x"});
  out = h.answer_steal("a", "y", true);
  CHECK(only<ComputeTask>(out).size() == 1);
  CHECK(only<ComputeTask>(out)[0].worker == "b");
  out = h.handle(AddKeys{"b", {"x"}, ""});
  CHECK(only<CloseWorker>(out).size() == 1);
}

TEST_CASE("retirement: a client that finds a retired holder gone hears of the new one",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  two_results_on_a(h);
  h.handle(RetireWorker{"a", "", ""});
  h.handle(AddKeys{"b", {"x", "y"}, ""});
  REQUIRE_FALSE(h.s.worker("a"));
  const auto& out = h.handle(MissingData{"c1", "x", "a", "", ""});
  const auto told = only<ReportKeyInMemory>(out);
  REQUIRE(told.size() == 1);
  CHECK(told[0].client == "c1");
  CHECK(told[0].key == "x");
  CHECK(h.s.task_state("x") == TaskStatus::memory);  // not recomputed
  CHECK(computed(out).empty());
}

TEST_CASE("retirement: a paused worker takes no copies until it resumes",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  two_results_on_a(h);
  h.handle(WorkerStatusChanged{"b", true, ""});
  auto out = h.handle(RetireWorker{"a", "", ""});
  CHECK(only<AcquireReplicas>(out).empty());
  out = h.handle(WorkerStatusChanged{"b", false, ""});
  CHECK(replicas_asked(out, "b") == std::vector<std::string>{"x", "y"});
}

TEST_CASE("retirement: two retiring workers sharing a copy: the one left with it copies it",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  two_results_on_a(h);  // x, y on a; b idle
  h.handle(RetireWorker{"a", "", ""});
  h.handle(AddKeys{"b", {"x"}, ""});  // y's copy is still on its way
  h.add_worker("c");
  // b retires: it runs nothing and x is on a too, so b closes at once, and a (earlier by
  // address, already looked at) now holds x's only copy: it must go to c.
  const auto& out = h.handle(RetireWorker{"b", "", ""});
  CHECK(only<CloseWorker>(out).size() == 1);
  CHECK(replicas_asked(out, "c") == std::vector<std::string>{"x", "y"});
}

TEST_CASE("retirement: a copy never confirmed is asked for again", "[scheduler][retirement]") {
  Harness h(without_stealing());
  h.add_worker("a");
  h.submit({task("x")});
  h.finish("x");
  h.add_worker("b");
  h.handle(CheckHeartbeats{1, 0, ""});
  auto out = h.handle(RetireWorker{"a", "", ""});
  REQUIRE(replicas_asked(out, "b") == std::vector<std::string>{"x"});
  out = h.handle(CheckHeartbeats{6, 0, ""});
  CHECK(only<AcquireReplicas>(out).empty());  // a copy takes milliseconds, but not always
  out = h.handle(CheckHeartbeats{12, 0, ""});
  CHECK(replicas_asked(out, "b") == std::vector<std::string>{"x"});
  out = h.handle(AddKeys{"b", {"x"}, ""});
  CHECK(only<CloseWorker>(out).size() == 1);
}

// ---- a client's RetireWorkers (Client::retire_workers) ----

namespace {
std::vector<ReportRetirement> answers(const Instructions& out) {
  return only<ReportRetirement>(out);
}

std::vector<std::string> failed_workers(const ReportRetirement& r) {
  std::vector<std::string> workers;
  for (const auto& f : r.failed) workers.push_back(f.worker);
  return workers;
}
}  // namespace

TEST_CASE("retire_workers: the workers named retire, and the client hears once they are gone",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  two_results_on_a(h);
  auto out = h.handle(RetireWorkers{"c1", 7, {"a"}, 0, ""});
  CHECK(replicas_asked(out, "b") == std::vector<std::string>{"x", "y"});
  CHECK(answers(out).empty());  // not before it is gone
  CHECK(h.s.worker("a")->retiring);
  out = h.handle(AddKeys{"b", {"x", "y"}, ""});
  REQUIRE(only<CloseWorker>(out).size() == 1);
  const auto told = answers(out);
  REQUIRE(told.size() == 1);
  CHECK(told[0].client == "c1");
  CHECK(told[0].request_id == 7);
  CHECK(told[0].retired == std::vector<std::string>{"a"});
  CHECK(told[0].failed.empty());
  CHECK(h.s.task_counts().lost == 0);
}

TEST_CASE("retire_workers: a count takes idle workers first, then those holding the fewest "
          "bytes",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  for (const char* w : {"a", "b", "c", "d"}) h.add_worker(w);
  TaskSpec big = task("big"), small = task("small"), slow = task("slow", {}, "slow");
  big.workers = {"a"};
  small.workers = {"b"};
  slow.workers = {"c"};
  h.submit({big, small, slow});
  h.finish("big", 1'000'000);
  h.finish("small", 10);
  REQUIRE(h.s.processing("c") == std::vector<std::string>{"slow"});
  // d holds nothing and runs nothing, b holds 10 bytes, a a megabyte, c runs a task.
  const auto& out = h.handle(RetireWorkers{"c1", 1, {}, 2, ""});
  CHECK(h.s.worker("b")->retiring);
  CHECK_FALSE(h.s.worker("a")->retiring);
  CHECK_FALSE(h.s.worker("c")->retiring);
  CHECK_FALSE(h.s.worker("d"));  // it kept nothing: closed at once
  CHECK(replicas_asked(out, "d").empty());
  CHECK(answers(out).empty());  // b's copy is on its way
}

TEST_CASE("retire_workers: names are taken as addresses are, and an unknown one fails at once",
          "[scheduler][retirement]") {
  Harness h;
  h.handle(AddWorker{"tcp://w1", 1, "alpha", 0, ""});
  const auto& out = h.handle(RetireWorkers{"c1", 3, {"alpha", "nobody"}, 0, ""});
  const auto told = answers(out);
  REQUIRE(told.size() == 1);
  CHECK(told[0].retired == std::vector<std::string>{"tcp://w1"});
  REQUIRE(failed_workers(told[0]) == std::vector<std::string>{"nobody"});
  CHECK_THAT(told[0].failed[0].reason, Catch::Contains("no worker of that address or name"));
  CHECK(h.s.workers().empty());
}

TEST_CASE("retire_workers: a worker whose only copies nobody can take is not retired: the "
          "client hears why, and the worker takes work again",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  one_result_on_a(h);
  auto out = h.handle(RetireWorkers{"c1", 1, {"a"}, 0, ""});
  auto told = answers(out);
  REQUIRE(told.size() == 1);
  CHECK(told[0].retired.empty());
  REQUIRE(failed_workers(told[0]) == std::vector<std::string>{"a"});
  CHECK_THAT(told[0].failed[0].reason, Catch::Contains("no other worker can take its 1 only copy"));
  CHECK(only<CloseWorker>(out).empty());
  CHECK_FALSE(h.s.worker("a")->retiring);
  out = h.submit({task("z", {"x"})});
  CHECK(h.s.processing_on("z") == "a");

  // Two holding data, both asked: the first (by address) stays, and takes the other's.
  h.add_worker("b");
  h.submit({task("w", {}, "inc")}, {"w"});
  h.run_all();
  REQUIRE(h.s.who_has("w") == std::vector<std::string>{"b"});
  out = h.handle(RetireWorkers{"c1", 2, {"a", "b"}, 0, ""});
  CHECK(replicas_asked(out, "a") == std::vector<std::string>{"w"});
  out = h.handle(AddKeys{"a", {"w"}, ""});
  told = answers(out);
  REQUIRE(told.size() == 1);
  CHECK(told[0].retired == std::vector<std::string>{"b"});
  CHECK(failed_workers(told[0]) == std::vector<std::string>{"a"});
}

TEST_CASE("retire_workers: a worker lost before it is done is reported not retired",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  two_results_on_a(h);
  h.handle(RetireWorkers{"c1", 5, {"a"}, 0, ""});
  const auto& out = h.handle(RemoveWorker{"a", "connection lost", false, "", 1});
  const auto told = answers(out);
  REQUIRE(told.size() == 1);
  REQUIRE(failed_workers(told[0]) == std::vector<std::string>{"a"});
  CHECK_THAT(told[0].failed[0].reason,
             Catch::Contains("left before its retirement was done (connection lost)"));
}

TEST_CASE("retire_workers: a worker retiring on its own is never given up, and a client that "
          "left hears nothing",
          "[scheduler][retirement]") {
  Harness h(without_stealing());
  one_result_on_a(h);
  h.handle(RetireWorker{"a", "lifetime", ""});
  auto out = h.handle(RetireWorkers{"admin", 1, {"a"}, 0, ""});
  CHECK(answers(out).empty());  // it waits for somewhere to copy to, as before
  CHECK(h.s.worker("a")->retiring);
  h.handle(RemoveClient{"admin", ""});
  h.add_worker("b");
  out = h.handle(AddKeys{"b", {"x"}, ""});
  CHECK(only<CloseWorker>(out).size() == 1);
  CHECK(answers(out).empty());
}

TEST_CASE("retire_workers: a worker whose retirement is given up takes the copies of one "
          "retiring by itself",
          "[scheduler][retirement]") {
  // Found by the simulation (seeds 10171, 10232 with --graceful-retirements).
  Harness h(without_stealing());
  two_results_on_a(h);  // x, y only on a; b holds nothing
  TaskSpec z = task("z");
  z.workers = {"b"};
  h.submit({z});
  h.finish("z");  // z only on b
  auto out = h.handle(RetireWorker{"a", "lifetime", ""});
  REQUIRE(replicas_asked(out, "b") == std::vector<std::string>{"x", "y"});
  // b is asked to retire too: a's copies have nowhere to go, and b's neither: b's retirement
  // is given up, and a copies to b after all.
  out = h.handle(RetireWorkers{"c1", 1, {"b"}, 0, ""});
  const auto told = answers(out);
  REQUIRE(told.size() == 1);
  CHECK(failed_workers(told[0]) == std::vector<std::string>{"b"});
  CHECK(replicas_asked(out, "b") == std::vector<std::string>{"x", "y"});
  out = h.handle(AddKeys{"b", {"x", "y"}, ""});
  CHECK(only<CloseWorker>(out).size() == 1);
  CHECK(h.s.task_counts().lost == 0);
}

TEST_CASE("retirement: a copy reported by a worker that now computes the key again is not freed "
          "there",
          "[scheduler][retirement]") {
  // b fetched x for a's retirement, a died before b's add_keys arrived, and x, lost, was
  // placed on b to compute again: freeing it there would drop b's run of x (or its result).
  Harness h(without_stealing());
  two_results_on_a(h);
  auto out = h.handle(RetireWorker{"a", "lifetime", ""});
  REQUIRE(replicas_asked(out, "b") == std::vector<std::string>{"x", "y"});
  h.handle(RemoveWorker{"a", "killed", false, "", 1.0});
  REQUIRE(h.s.processing_on("x") == "b");

  out = h.handle(AddKeys{"b", {"x"}, ""});
  CHECK(freed_on(out, "b").empty());
  CHECK(h.s.processing_on("x") == "b");
  out = h.finish("x");
  CHECK(h.s.task_state("x") == TaskStatus::memory);
  CHECK(h.s.who_has("x") == std::vector<std::string>{"b"});
}
