// Worker deaths reported by a nanny (WorkerDied): the scheduler waits for the report after a
// lost connection, blames only the tasks that were running, names the signal, and falls back
// to blaming every processing task when no report comes.
#include "scheduler_harness.hpp"

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;
using S = TaskStatus;

namespace {
const Instructions& add_nannied_worker(Harness& h, const std::string& address, double now = 0) {
  return h.handle(AddWorker{address, 1, "", now, "", true});
}
WorkerDied died(const std::string& address, std::vector<std::string> running,
                std::string cause = "SIGSEGV (Segmentation fault)", double now = 0) {
  return WorkerDied{address, address, std::move(cause), std::move(running), now, ""};
}
}  // namespace

TEST_CASE("scheduler: a nannied worker's tasks wait for the death report, then only the "
          "running one is blamed", "[scheduler]") {
  Harness h;
  add_nannied_worker(h, "tcp://a:1");
  h.submit({task("crash"), task("queued")});
  REQUIRE(h.s.processing_on("queued") == std::string("tcp://a:1"));
  add_nannied_worker(h, "tcp://b:1");

  const auto& lost = h.handle(RemoveWorker{"tcp://a:1", "connection reset", false, "", 0.0});
  CHECK(only<ComputeTask>(lost).empty());  // nothing moves before the report
  CHECK(h.s.awaiting_death_reports() == 1);

  const auto& out = h.handle(died("tcp://a:1", {"crash"}));
  CHECK(h.s.awaiting_death_reports() == 0);
  CHECK(sorted(computed(out)) == std::vector<std::string>{"crash", "queued"});
  CHECK(h.s.processing_on("crash") == std::string("tcp://b:1"));
  CHECK(only<ReportTaskErred>(out).empty());
}

TEST_CASE("scheduler: a task that kills 3 nannied workers errs naming them and the signal",
          "[scheduler]") {
  Harness h;
  add_nannied_worker(h, "tcp://w1:1");
  add_nannied_worker(h, "tcp://w2:1");
  h.submit({task("poison", {}, "segfault"), task("innocent")});
  for (int death = 1; death <= 3; ++death) {
    const std::string victim = *h.s.processing_on("poison");
    const auto innocent_on = h.s.processing_on("innocent");
    if (death < 3) add_nannied_worker(h, fmt::format("tcp://r{}:1", death));
    if (death == 2) {  // the report may also come first
      h.handle(died(victim, {"poison"}, "SIGABRT (Aborted)"));
      h.handle(RemoveWorker{victim, "connection reset", false, "", 0.0});
    } else {
      h.handle(RemoveWorker{victim, "connection reset", false, "", 0.0});
      h.handle(died(victim, {"poison"}));
    }
    if (death < 3) CHECK(h.s.task_state("poison") == S::processing);
    if (innocent_on && *innocent_on == victim) CHECK(h.s.task_state("innocent") != S::erred);
  }
  const auto reports = only<ReportTaskErred>(h.last);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].key == "poison");
  CHECK_THAT(reports[0].message, Catch::Contains("task 'poison' (segfault) killed 3 workers") &&
                                     Catch::Contains("by SIGSEGV (Segmentation fault)"));
  CHECK(h.s.task_state("poison") == S::erred);
  // the innocent task was never blamed and still runs
  CHECK(h.s.task_state("innocent") != S::erred);
}

TEST_CASE("scheduler: with no death report in time every processing task is blamed",
          "[scheduler]") {
  SchedulerOptions options;
  options.allowed_failures = 1;
  options.death_report_seconds = 1.0;
  Harness h(options);
  add_nannied_worker(h, "tcp://a:1");
  h.submit({task("x"), task("y")});
  add_nannied_worker(h, "tcp://b:1");
  h.handle(RemoveWorker{"tcp://a:1", "connection reset", false, "", 10.0});
  h.handle(CheckHeartbeats{10.5, 0, ""});
  CHECK(h.s.awaiting_death_reports() == 1);  // not yet overdue
  const auto& out = h.handle(CheckHeartbeats{11.5, 0, ""});
  CHECK(h.s.awaiting_death_reports() == 0);
  const auto reports = only<ReportTaskErred>(out);
  REQUIRE(reports.size() == 2);
  CHECK_THAT(reports[0].message, Catch::Contains("its nanny sent no report"));
  // a late report changes nothing
  const auto& late = h.handle(died("tcp://a:1", {"x"}));
  CHECK(only<ReportTaskErred>(late).empty());
}

TEST_CASE("scheduler: an expected removal of a nannied worker waits for no report",
          "[scheduler]") {
  Harness h;
  add_nannied_worker(h, "tcp://a:1");
  h.submit({task("x")});
  add_nannied_worker(h, "tcp://b:1");
  const auto& out = h.handle(RemoveWorker{"tcp://a:1", "retiring", true, "", 0.0});
  CHECK(h.s.awaiting_death_reports() == 0);
  CHECK(computed(out) == std::vector<std::string>{"x"});
}

TEST_CASE("scheduler: with no worker left, waiting tasks err after no_workers_timeout, and "
          "the log says so", "[scheduler]") {
  SchedulerOptions options;
  options.no_workers_timeout = 5;
  Harness h(options);
  h.add_worker("tcp://a:1");
  h.submit({task("x"), task("y", {"x"})});
  h.handle(RemoveWorker{"tcp://a:1", "killed", false, "", 0.0});
  REQUIRE((h.s.task_state("x") == S::no_worker || h.s.task_state("x") == S::queued));
  const auto& first = h.handle(CheckHeartbeats{1.0, 0, ""});
  bool warned = false;
  for (const auto& l : only<LogEvent>(first))
    warned = warned || l.message.find("err if none comes within 5 s") != std::string::npos;
  CHECK(warned);
  CHECK(only<ReportTaskErred>(h.handle(CheckHeartbeats{5.5, 0, ""})).empty());
  const auto& out = h.handle(CheckHeartbeats{6.5, 0, ""});
  const auto erred = only<ReportTaskErred>(out);
  REQUIRE(erred.size() == 2);  // x, and y that depends on it
  CHECK_THAT(erred[0].message, Catch::Contains("no worker was connected for 5.5 s"));
  CHECK(h.s.task_state("x") == S::erred);
  CHECK(h.s.task_state("y") == S::erred);
}

TEST_CASE("scheduler: no_workers_timeout off (the default): tasks wait for a worker, and the "
          "log says they do", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.submit({task("x")});
  h.handle(RemoveWorker{"tcp://a:1", "killed", false, "", 0.0});
  bool warned = false;
  for (const auto& l : only<LogEvent>(h.handle(CheckHeartbeats{1.0, 0, ""})))
    warned = warned || l.message.find("no_workers_timeout is off") != std::string::npos;
  CHECK(warned);
  CHECK(only<ReportTaskErred>(h.handle(CheckHeartbeats{1e6, 0, ""})).empty());
  h.add_worker("tcp://b:1", 1, 1e6);
  CHECK(h.s.processing_on("x") == std::string("tcp://b:1"));
}

// A worker dropped for missing heartbeats (frozen, partitioned) joins again with the results
// it kept (Dask's reconnecting worker re-registers its keys).
TEST_CASE("scheduler: a worker joining again with the results it kept: those in memory are "
          "its replicas again, the rest are freed there", "[scheduler]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  h.submit({task("x"), task("y")});
  h.run_all();
  REQUIRE(h.s.task_state("x") == S::memory);
  const std::string holder = h.s.who_has("x").at(0);
  const std::string other = holder == "tcp://a:1" ? "tcp://b:1" : "tcp://a:1";
  // Both results on one worker, so that its loss loses them.
  h.handle(RemoveWorker{other, "gone", true, "", 0.0});
  h.submit({task("z")});
  h.run_all();
  REQUIRE(h.s.who_has("y") == std::vector<std::string>{holder});
  h.handle(RemoveWorker{holder, "no heartbeat for 60 s", false, "", 0.0});
  h.handle(AddWorker{"tcp://c:1", 1, "c", 0, ""});  // recomputes what the holder had
  h.run_all();
  h.release({"y"});
  REQUIRE(h.s.task_state("y") == std::nullopt);

  // It comes back under a new address with x (in memory on c now), y (released since)
  // and an unknown key.
  const auto& out =
      h.handle(AddWorker{"tcp://a:2", 1, "a-again", 0, "", false, {}, {"x", "y", "nobody"}});
  CHECK(sorted(h.s.who_has("x")) == std::vector<std::string>{"tcp://a:2", "tcp://c:1"});
  CHECK(sorted(freed_on(out, "tcp://a:2")) == std::vector<std::string>{"nobody", "y"});
  CHECK(freed_on(out, "tcp://c:1").empty());
}
