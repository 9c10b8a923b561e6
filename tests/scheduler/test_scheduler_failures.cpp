// Task errors and retries, worker loss and heartbeats, cancellation, lost data, stale
// messages, stimulus ids and formatting.
#include "scheduler_harness.hpp"

#include <map>

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;
using S = TaskStatus;

TEST_CASE(
    "scheduler: an erring task is reported with its message and its dependents err "
    "naming it",
    "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"}), task("z", {"y"})});
  const auto reports = only<ReportTaskErred>(h.fail("x", "ZeroDivisionError: division by zero"));
  REQUIRE(reports.size() == 3);
  CHECK(reports[0].key == "x");
  CHECK(reports[0].blamed_key == "x");
  CHECK(reports[0].message == "ZeroDivisionError: division by zero");
  for (int i : {0, 1, 2}) CHECK(reports[i].cause == "ZeroDivisionError: division by zero");
  for (int i : {1, 2}) {
    CHECK(reports[i].blamed_key == "x");
    CHECK(reports[i].message == "dependency 'x' failed: ZeroDivisionError: division by zero");
  }
  CHECK(sorted({reports[1].key, reports[2].key}) == std::vector<std::string>{"y", "z"});
  for (const char* key : {"x", "y", "z"}) CHECK(h.s.task_state(key) == S::erred);
  CHECK(h.s.failure("z")->blamed_key == "x");
  // Releasing them forgets them, and the worker drops the erred task.
  h.release({"x", "y", "z"});
  CHECK(h.s.task_count() == 0);
  CHECK(freed_on(h.last, "tcp://a:1") == std::vector<std::string>{"x"});
}

TEST_CASE("scheduler: a task error names the exception type and the worker, for dependents too",
          "[scheduler]") {
  Harness h;
  h.handle(AddWorker{"tcp://a:1", 1, "w-a", 0, ""});
  h.submit({task("x"), task("y", {"x"})});
  const auto reports = only<ReportTaskErred>(h.fail("x", "bad input", "std::invalid_argument"));
  REQUIRE(reports.size() == 2);
  for (const auto& r : reports) {
    INFO(r.key);
    CHECK(r.exception_type == "std::invalid_argument");
    CHECK(r.worker_name == "w-a");
    CHECK(r.worker_address == "tcp://a:1");
  }
  const auto failure = h.s.failure("y");
  REQUIRE(failure);
  CHECK(failure->exception_type == "std::invalid_argument");
  CHECK(failure->worker_name == "w-a");
}

TEST_CASE("scheduler: a worker named like a live worker is refused, and once that one is removed "
          "the name is free",
          "[scheduler]") {
  Harness h;
  h.handle(AddWorker{"tcp://a:1", 1, "w1", 0, ""});
  const auto refused = only<RefuseWorker>(h.handle(AddWorker{"tcp://b:1", 1, "w1", 0, ""}));
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].worker == "tcp://b:1");
  CHECK_THAT(refused[0].reason, Catch::Contains("'w1'") && Catch::Contains("tcp://a:1") &&
                                    Catch::Contains("--name"));
  const auto logged = only<LogEvent>(h.last);
  REQUIRE(logged.size() == 1);
  CHECK(logged[0].level == LogLevel::warning);
  CHECK_THAT(logged[0].message, Catch::Contains("tcp://a:1") && Catch::Contains("tcp://b:1"));
  REQUIRE(h.s.workers().size() == 1);
  CHECK(h.s.workers()[0].address == "tcp://a:1");
  // Work submitted now goes to the first worker only.
  CHECK(only<ComputeTask>(h.submit({task("t")})).at(0).worker == "tcp://a:1");

  // The first one dies (its connection closed); the same name comes back at a new address,
  // as a restarted worker does, and is taken, with the dead one's task.
  h.handle(RemoveWorker{"tcp://a:1", "connection closed", false, ""});
  const auto& joined = h.handle(AddWorker{"tcp://c:1", 1, "w1", 1, ""});
  CHECK(only<RefuseWorker>(joined).empty());
  CHECK(computed(joined) == std::vector<std::string>{"t"});
  REQUIRE(h.s.workers().size() == 1);
  CHECK(h.s.workers()[0].address == "tcp://c:1");
}

TEST_CASE("scheduler: a task with retries left is run again before it errs", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  auto t = task("x");
  t.retries = 1;
  h.submit({t});
  const auto& first = h.fail("x", "flaky");
  CHECK(only<ReportTaskErred>(first).empty());
  CHECK(computed(first) == std::vector<std::string>{"x"});
  CHECK(freed_on(first, "tcp://a:1") == std::vector<std::string>{"x"});  // before the resend
  const auto& second = h.fail("x", "flaky again");
  REQUIRE(only<ReportTaskErred>(second).size() == 1);
  CHECK(only<ReportTaskErred>(second)[0].message == "flaky again");
}

TEST_CASE("scheduler: a task submitted on top of an erred key errs at once", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x")});
  h.fail("x");
  const auto reports = only<ReportTaskErred>(h.submit({task("y", {"x"})}, {"y"}));
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].key == "y");
  CHECK(reports[0].blamed_key == "x");
  CHECK(computed(h.last).empty());
}

TEST_CASE("scheduler: a graph with an unknown dependency or a cycle is reported cancelled",
          "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  const auto& out = h.submit({task("ok"), task("helper"), task("orphan", {"helper", "nowhere"}),
                              task("p", {"q"}), task("q", {"p"}), task("above", {"orphan"})},
                             {"ok", "orphan", "p", "q", "above"});
  CHECK(computed(out) == std::vector<std::string>{"ok"});
  auto cancelled = only<ReportCancelled>(out);
  REQUIRE(cancelled.size() == 4);
  std::map<std::string, std::string> reason;
  for (const auto& c : cancelled) reason[c.keys.at(0)] = c.reason;
  CHECK(reason["orphan"] == "lost dependencies: unknown key 'nowhere'");
  CHECK(reason["above"] == "lost dependencies: unknown key 'nowhere'");
  CHECK_THAT(reason["p"], Catch::Contains("cycle"));
  CHECK_THAT(reason["q"], Catch::Contains("cycle"));
  CHECK(h.s.task_count() == 1);  // "helper" is only needed by "orphan", which cannot run
}

TEST_CASE("scheduler: a removed worker's running tasks are rescheduled elsewhere", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x")});
  h.add_worker("tcp://b:1");
  REQUIRE(h.s.processing_on("x") == "tcp://a:1");
  const auto compute =
      only<ComputeTask>(h.handle(RemoveWorker{"tcp://a:1", "comm closed", false, ""}));
  REQUIRE(compute.size() == 1);
  CHECK(compute[0].worker == "tcp://b:1");
  CHECK(freed_on(h.last, "tcp://a:1").empty());  // nothing is sent to a dead worker
  CHECK(h.s.workers().size() == 1);
  h.finish("x");
  CHECK(h.s.task_state("x") == S::memory);
}

TEST_CASE(
    "scheduler: keys held only by a lost worker are recomputed and their dependents wait "
    "again",
    "[scheduler]") {
  Harness h(waiting_for_inputs());
  h.add_worker("tcp://a:1");
  h.submit({task("x")});
  h.add_worker("tcp://b:1");
  h.submit({task("shared")});
  REQUIRE(h.s.processing_on("shared") == "tcp://b:1");
  h.finish("x", 100);
  h.finish("shared", 100);
  h.submit({task("y", {"x", "shared"})}, {"y"});
  REQUIRE(h.s.processing_on("y") == "tcp://a:1");

  const auto& out = h.handle(RemoveWorker{"tcp://a:1", "killed", false, ""});
  CHECK(keys_of(only<ReportKeyLost>(out)) == std::vector<std::string>{"x"});
  CHECK(computed(out) == std::vector<std::string>{"x"});  // recomputed from its spec
  CHECK(h.s.processing_on("x") == "tcp://b:1");
  CHECK(h.s.task_state("y") == S::waiting);
  CHECK(h.s.task_state("shared") == S::memory);  // b still holds a copy
  CHECK(h.s.who_has("shared") == std::vector<std::string>{"tcp://b:1"});

  const auto compute = only<ComputeTask>(h.finish("x"));
  REQUIRE(compute.size() == 1);
  CHECK(compute[0].key == "y");
  CHECK(compute[0].worker == "tcp://b:1");
  CHECK(keys_of(only<ReportKeyInMemory>(h.last)) == std::vector<std::string>{"x"});
}

TEST_CASE("scheduler: a task that was running on 3 workers that died errs saying so",
          "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("crash"), task("after", {"crash"})});
  for (const char* next : {"tcp://b:1", "tcp://c:1"}) {
    const std::string current = *h.s.processing_on("crash");
    h.add_worker(next);
    h.handle(RemoveWorker{current, "killed", false, ""});
    REQUIRE(h.s.processing_on("crash") == next);
  }
  const auto& out = h.handle(RemoveWorker{"tcp://c:1", "killed", false, ""});
  const auto reports = only<ReportTaskErred>(out);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0].key == "crash");
  CHECK_THAT(reports[0].message,
             Catch::Contains("task 'crash' (inc) killed 3 workers that ran it: tcp://a:1, "
                             "tcp://b:1, tcp://c:1; last: tcp://c:1 (killed)"));
  CHECK(reports[1].key == "after");
  CHECK(h.s.task_state("crash") == S::erred);
  CHECK(h.s.story("crash").back().finish == S::erred);
}

TEST_CASE("scheduler: expected removals do not count against a task", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x")});
  for (int i = 0; i < 5; ++i) {
    const std::string next = fmt::format("tcp://n{}:1", i);
    const std::string current = *h.s.processing_on("x");
    h.add_worker(next);
    h.handle(RemoveWorker{current, "retiring", true, ""});
    REQUIRE(h.s.processing_on("x") == next);
  }
}

TEST_CASE("scheduler: a worker that misses heartbeats past the timeout is closed and removed",
          "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1", 1, 0.0);
  h.add_worker("tcp://b:1", 1, 0.0);
  h.submit({task("x")});
  REQUIRE(h.s.processing_on("x") == "tcp://a:1");
  h.handle(Heartbeat{"tcp://b:1", 8.0, ""});
  CHECK(only<CloseWorker>(h.handle(CheckHeartbeats{9.0, 10.0, ""})).empty());
  const auto& out = h.handle(CheckHeartbeats{12.0, 10.0, ""});
  const auto closed = only<CloseWorker>(out);
  REQUIRE(closed.size() == 1);
  CHECK(closed[0].worker == "tcp://a:1");
  CHECK_THAT(closed[0].reason, Catch::Contains("no heartbeat"));
  CHECK(h.s.workers().size() == 1);
  CHECK(computed(out) == std::vector<std::string>{"x"});
  CHECK(h.s.processing_on("x") == "tcp://b:1");
}

TEST_CASE("scheduler: workers timing out together hand their work to the survivor only",
          "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1", 1, 0.0);
  h.add_worker("tcp://b:1", 1, 0.0);
  h.add_worker("tcp://c:1", 3, 0.0);  // 4 slots: room for all three roots
  h.submit({task("x"), task("y"), task("z")});
  REQUIRE(h.s.processing("tcp://c:1") == std::vector<std::string>{"z"});
  h.handle(Heartbeat{"tcp://c:1", 20.0, ""});
  const auto& out = h.handle(CheckHeartbeats{25.0, 10.0, ""});
  CHECK(only<CloseWorker>(out).size() == 2);
  for (const auto& c : only<ComputeTask>(out)) CHECK(c.worker == "tcp://c:1");
  CHECK(h.s.processing("tcp://c:1") == std::vector<std::string>{"x", "y", "z"});
}

TEST_CASE("scheduler: losing every worker parks ready tasks until a worker joins", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("root"), task("x", {"root"})});
  h.finish("root");
  REQUIRE(h.s.task_state("x") == S::processing);
  h.handle(RemoveWorker{"tcp://a:1", "killed", false, ""});
  CHECK(h.s.task_state("root") == S::queued);  // lost; recomputed once a worker is back
  CHECK(h.s.task_state("x") == S::waiting);
  h.add_worker("tcp://b:1");
  h.run_all();
  CHECK(h.s.task_state("x") == S::memory);
  CHECK(h.s.who_has("x") == std::vector<std::string>{"tcp://b:1"});
}

TEST_CASE("scheduler: cancelling a key releases it and its dependents", "[scheduler]") {
  Harness h(waiting_for_inputs());
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"}), task("other")});
  const auto& out = h.handle(CancelKeys{"c1", {"x"}, false, ""});
  CHECK(freed_on(out, "tcp://a:1") == std::vector<std::string>{"x"});
  const auto cancelled = only<ReportCancelled>(out);
  REQUIRE(cancelled.size() == 1);
  CHECK(cancelled[0].client == "c1");
  CHECK(sorted(cancelled[0].keys) == std::vector<std::string>{"x", "y"});
  CHECK_FALSE(h.s.contains("x"));
  CHECK_FALSE(h.s.contains("y"));
  CHECK(h.s.task_state("other") == S::processing);
}

TEST_CASE("scheduler: cancelling a key another client wants only drops this client's interest",
          "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x")}, {"x"}, "c1");
  h.submit({task("x")}, {"x"}, "c2");
  const auto& out = h.handle(CancelKeys{"c1", {"x"}, false, ""});
  CHECK(freed_on(out, "tcp://a:1").empty());
  CHECK(h.s.task_state("x") == S::processing);
  CHECK(h.s.wanted_by("c1").empty());
  CHECK(h.s.wanted_by("c2") == std::vector<std::string>{"x"});
  SECTION("unless forced") {
    const auto cancelled = only<ReportCancelled>(h.handle(CancelKeys{"c1", {"x"}, true, ""}));
    CHECK(cancelled.size() == 2);
    CHECK_FALSE(h.s.contains("x"));
  }
}

namespace {
// x in memory on a only; a kept busy by two sleeping tasks, so y(x) runs on b.
void x_on_a_and_y_running_on_b(Harness& h, int b_threads = 1) {
  h.add_worker("tcp://a:1");
  h.submit({task("x")}, {"x"});
  h.finish("x");
  h.submit({task("pad", {}, "sleep"), task("pad2", {}, "sleep")});
  h.add_worker("tcp://b:1", b_threads);
  h.submit({task("y", {"x"})}, {"y"});
  REQUIRE(h.s.processing_on("y") == "tcp://b:1");
}
}  // namespace

TEST_CASE("scheduler: missing data drops the replica and recomputes a key left with none",
          "[scheduler]") {
  Harness h(waiting_for_inputs());
  x_on_a_and_y_running_on_b(h);
  const std::string y_worker = "tcp://b:1";
  const auto& out = h.handle(MissingData{y_worker, "x", "tcp://a:1", "y", ""});
  CHECK(h.s.task_state("x") == S::processing);  // recomputed
  CHECK(h.s.task_state("y") == S::waiting);
  CHECK(freed_on(out, "tcp://b:1") == std::vector<std::string>{"y"});
  CHECK(keys_of(only<ReportKeyLost>(out)) == std::vector<std::string>{"x"});
}

TEST_CASE("scheduler: a lost result whose input now fails errs instead of waiting forever",
          "[scheduler]") {
  Harness h;
  x_on_a_and_y_running_on_b(h, 4);
  h.finish("y");  // y in memory on b; x only on a
  h.handle(RemoveWorker{"tcp://a:1", "killed", false, ""});
  REQUIRE(h.s.task_state("x") == S::processing);  // x computed again, on b
  h.fail("x", "x broke this time");
  REQUIRE(h.s.task_state("x") == S::erred);
  CHECK(h.s.task_state("y") == S::memory);
  // y's only copy goes with b, and it cannot be computed again from a failed input: the
  // client that was told key_lost must hear that it erred, not wait for a result.
  const auto& out = h.handle(RemoveWorker{"tcp://b:1", "killed", false, ""});
  CHECK(keys_of(only<ReportKeyLost>(out)) == std::vector<std::string>{"y"});
  const auto erred = only<ReportTaskErred>(out);
  REQUIRE(erred.size() == 1);
  CHECK(erred[0].key == "y");
  CHECK(erred[0].message.find("x broke this time") != std::string::npos);
  CHECK(h.s.task_state("y") == S::erred);
}

TEST_CASE("scheduler: stale messages are ignored or answered with FreeKeys", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  h.submit({task("x")});
  const auto attempt = h.s.attempt("x");
  // A debug log:
  CHECK(h.handle(TaskFinished{"tcp://gone:1", "x", 8, 0.1, "", attempt}).size() == 1);
  CHECK(h.s.task_state("x") == S::processing);
  h.handle(TaskFinished{"tcp://b:1", "x", 8, 0.1, "", attempt});  // x runs on a, not b
  CHECK(freed_on(h.last, "tcp://b:1") == std::vector<std::string>{"x"});
  h.handle(TaskFinished{"tcp://a:1", "unknown", 8, 0.1, "", attempt});
  CHECK(freed_on(h.last, "tcp://a:1") == std::vector<std::string>{"unknown"});
  h.handle(TaskErred{"tcp://b:1", "x", "not yours", "", "", attempt});
  CHECK(h.s.task_state("x") == S::processing);
  h.handle(RemoveWorker{"tcp://nobody:1", "", false, ""});
  h.handle(Heartbeat{"tcp://nobody:1", 1.0, ""});
  h.handle(ClientReleasesKeys{"nobody", {"x"}, ""});
  CHECK(h.s.task_state("x") == S::processing);
}

TEST_CASE("scheduler: every instruction carries the stimulus id of its event", "[scheduler]") {
  Harness h(waiting_for_inputs());
  h.add_worker("tcp://a:1");
  const auto& out = h.handle(UpdateGraph{"c1", {task("x"), task("y", {"x"})}, {"y"}, "graph-7"});
  REQUIRE_FALSE(out.empty());
  for (const Instruction& i : out) CHECK(stimulus_of(i) == "graph-7");
  const auto& done = h.handle(TaskFinished{"tcp://a:1", "x", 8, 0.1, "", h.s.attempt("x")});
  REQUIRE_FALSE(done.empty());
  for (const Instruction& i : done) CHECK_THAT(stimulus_of(i), Catch::StartsWith("task-finished-"));
  const auto story = h.s.story("x");
  REQUIRE(story.size() == 3);
  CHECK(story[0].stimulus_id == "graph-7");
  CHECK(story[0].start == S::released);
  CHECK(story[0].finish == S::waiting);
  CHECK(story[2].finish == S::memory);
}

TEST_CASE("scheduler: the transition log keeps the last transition_log_length, oldest first",
          "[scheduler]") {
  // One task through its whole life (4+ transitions) with rings of 1-5 records: each holds
  // the last ones of the full story, in order, whichever slot the ring wrapped at.
  auto run = [](Harness& h) {
    h.add_worker("tcp://a:1");
    h.handle(UpdateGraph{"c1", {task("x")}, {"x"}, "graph-1"});
    h.handle(TaskFinished{"tcp://a:1", "x", 8, 0.1, "done-x", h.s.attempt("x")});
    h.handle(ClientReleasesKeys{"c1", {"x"}, "release-x"});
  };
  Harness full;
  run(full);
  const auto all = full.s.story("x");
  REQUIRE(all.size() >= 4);
  CHECK(all.front().start == S::released);
  CHECK(all.back().finish == S::forgotten);
  for (std::size_t n = 1; n <= 5; ++n) {
    Harness h({.transition_log_length = n});
    run(h);
    const auto got = h.s.story("x");
    REQUIRE(got.size() == std::min(n, all.size()));
    for (std::size_t i = 0; i < got.size(); ++i) {
      const auto& want = all[all.size() - got.size() + i];
      INFO("ring of " << n << ", record " << i);
      CHECK(got[i].start == want.start);
      CHECK(got[i].finish == want.finish);
      CHECK(got[i].stimulus_id == want.stimulus_id);
    }
  }
  Harness off({.transition_log_length = 0});
  run(off);
  CHECK(off.s.story("x").empty());
}

TEST_CASE("scheduler: graphs past max_tasks are refused", "[scheduler]") {
  Harness h({.max_tasks = 2});
  h.add_worker("tcp://a:1");
  const auto reports =
      only<ReportTaskErred>(h.submit({task("a"), task("b"), task("c", {"a", "b"})}, {"c"}));
  REQUIRE(reports.size() == 1);
  CHECK_THAT(reports[0].message, Catch::Contains("limit of 2"));
  CHECK(h.s.task_count() == 0);
}

TEST_CASE("scheduler: task states and instructions format for logs", "[scheduler]") {
  CHECK(fmt::format("{}", S::no_worker) == "no-worker");
  CHECK(fmt::format("{:>10}", S::memory) == "    memory");
  CHECK(fmt::format("{}", Priority{.generation = 3, .order = 7}) == "(3, 7)");
  CHECK(fmt::format("{}", Priority{.user = 2, .generation = 3, .order = 7}) == "(user 2, 3, 7)");
  const Instruction free = FreeKeys{"tcp://a:1", {"x", "y"}, "s-1"};
  CHECK(fmt::format("{}", free) == "free-keys [\"x\", \"y\"] -> tcp://a:1 [s-1]");
  const Instruction log = LogEvent{LogLevel::warning, "hello", "s-2"};
  CHECK(fmt::format("{}", log) == "log warning: hello [s-2]");
}

TEST_CASE("scheduler: a cancelled task still running holds its thread until the worker "
          "says it ended", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("hang", {}, "hang")});
  REQUIRE(h.s.processing_on("hang") == std::string("tcp://a:1"));
  h.add_worker("tcp://b:1");
  h.handle(CancelKeys{"c1", {"hang"}, true, ""});
  std::vector<TaskSpec> fresh;
  for (int i = 0; i < 6; ++i) fresh.push_back(task(fmt::format("new-{}", i)));
  h.submit(fresh);
  for (int i = 0; i < 6; ++i) {
    const auto on = h.s.processing_on(fmt::format("new-{}", i));
    CHECK((!on || *on == "tcp://b:1"));  // placed on b, or queued: never behind the hung task
  }
  CHECK(h.s.processing("tcp://a:1").empty());
  // The worker says the thread is still held; later, that it is free again.
  h.handle(ThreadsBusy{"tcp://a:1", 1, ""});
  CHECK(h.s.processing("tcp://a:1").empty());
  const auto& freed = h.handle(ThreadsBusy{"tcp://a:1", 0, ""});
  bool placed_on_a = false;
  for (const auto& c : only<ComputeTask>(freed)) placed_on_a = placed_on_a || c.worker == "tcp://a:1";
  CHECK(placed_on_a);
}

TEST_CASE("scheduler: after being paused itself, it drops no worker whose heartbeats it only "
          "did not read", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1", 1, 0.0);
  h.add_worker("tcp://b:1", 1, 0.0);
  h.submit({task("x")});
  const double timeout = 10.0, interval = 1.0;
  for (double t = 1.0; t <= 5.0; t += interval)
    CHECK(only<CloseWorker>(h.handle(CheckHeartbeats{t, timeout, "", interval})).empty());
  // SIGSTOPped from t=5 to t=20: the first check after waking comes before the heartbeats
  // that wait in its sockets are read.
  CHECK(only<CloseWorker>(h.handle(CheckHeartbeats{20.0, timeout, "", interval})).empty());
  h.handle(Heartbeat{"tcp://a:1", 20.01, ""});  // then they are read: a is alive
  for (double t = 21.0; t <= 29.0; t += interval) {
    if (t == 25.0) h.handle(Heartbeat{"tcp://a:1", t, ""});
    CHECK(only<CloseWorker>(h.handle(CheckHeartbeats{t, timeout, "", interval})).empty());
  }
  CHECK(h.s.workers().size() == 2);
  // b really is silent: a full timeout of checks after the scheduler woke, it goes.
  const auto& out = h.handle(CheckHeartbeats{30.5, timeout, "", interval});
  const auto closed = only<CloseWorker>(out);
  REQUIRE(closed.size() == 1);
  CHECK(closed[0].worker == "tcp://b:1");
  CHECK(h.s.workers().size() == 1);
}

namespace {
// x pinned to b, y(x) pinned to a (or, `y_may_move`, preferring a: allow_other_workers):
// pinned, y can only ever fetch x from b.
void y_on_a_needs_x_pinned_to_b(Harness& h, bool y_may_move = false) {
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  auto x = task("x");
  x.workers = {"tcp://b:1"};
  auto y = task("y", {"x"});
  y.workers = {"tcp://a:1"};
  y.allow_other_workers = y_may_move;
  h.submit({x, y}, {"y"});
}
}  // namespace

TEST_CASE("scheduler: a task whose worker cannot fetch an input from a live holder errs after "
          "allowed_fetch_failures tries, naming both workers",
          "[scheduler]") {
  Harness h(waiting_for_inputs());
  y_on_a_needs_x_pinned_to_b(h);
  for (int round = 1; round <= 3; ++round) {
    INFO("round " << round);
    REQUIRE(h.s.processing_on("x") == "tcp://b:1");
    h.finish("x");
    REQUIRE(h.s.processing_on("y") == "tcp://a:1");
    const auto& out = h.handle(MissingData{"tcp://a:1", "x", "tcp://b:1", "y", ""});
    const auto erred = only<ReportTaskErred>(out);
    if (round < 3) {
      CHECK(erred.empty());
      CHECK(h.s.task_state("y") == S::waiting);  // x computed again, y sent again
      continue;
    }
    REQUIRE(erred.size() == 1);
    CHECK(erred[0].key == "y");
    CHECK(erred[0].message.find("failed 3 times to fetch it from worker tcp://b:1") !=
          std::string::npos);
    CHECK(h.s.task_state("y") == S::erred);
  }
}

TEST_CASE("scheduler: a task that may run elsewhere is placed on another worker once its "
          "worker could not fetch an input from a live holder",
          "[scheduler]") {
  // y prefers a (allow_other_workers), x runs only on b, and a cannot reach b: sent back to
  // a, y would fail the same way until it erred.
  Harness h(waiting_for_inputs());
  y_on_a_needs_x_pinned_to_b(h, true);
  h.finish("x");
  REQUIRE(h.s.processing_on("y") == "tcp://a:1");
  CHECK(only<ReportTaskErred>(h.handle(MissingData{"tcp://a:1", "x", "tcp://b:1", "y", ""}))
            .empty());
  REQUIRE(h.s.processing_on("x") == "tcp://b:1");  // computed again
  h.finish("x");
  CHECK(h.s.processing_on("y") == "tcp://b:1");
  h.finish("y");
  CHECK(h.s.task_state("y") == S::memory);
}

TEST_CASE("scheduler: fetch failures from another holder start the count again",
          "[scheduler]") {
  Harness h(waiting_for_inputs());
  h.add_worker("tcp://a:1");
  h.handle(AddWorker{"tcp://b:1", 1, "wb", 0, ""});
  auto x = task("x");
  x.workers = {"wb"};
  auto y = task("y", {"x"});
  y.workers = {"tcp://a:1"};
  h.submit({x, y}, {"y"});
  const auto fail_fetch = [&](const std::string& holder) {
    REQUIRE(h.s.processing_on("x") == holder);
    h.finish("x");
    REQUIRE(h.s.processing_on("y") == "tcp://a:1");
    return only<ReportTaskErred>(h.handle(MissingData{"tcp://a:1", "x", holder, "y", ""}));
  };
  CHECK(fail_fetch("tcp://b:1").empty());
  CHECK(fail_fetch("tcp://b:1").empty());
  // wb restarted (a new address): what failed with the old process says nothing of the new.
  h.handle(RemoveWorker{"tcp://b:1", "killed", false, ""});
  h.handle(AddWorker{"tcp://b:2", 1, "wb", 0, ""});
  CHECK(fail_fetch("tcp://b:2").empty());
  CHECK(fail_fetch("tcp://b:2").empty());
  CHECK(fail_fetch("tcp://b:2").size() == 1);
}
