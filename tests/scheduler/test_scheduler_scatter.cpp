// Data a client scattered straight to workers (UpdateGraph::scattered): the scheduler records
// who holds it and never runs its task while a holder is connected.
#include "scheduler_harness.hpp"

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;
using S = TaskStatus;

namespace {
// The update_graph a client sends once `key` is on `workers`: its task (which says the data
// was lost, if it ever runs) and where the data is.
UpdateGraph scattered(const std::string& key, std::vector<std::string> workers,
                      std::int64_t nbytes = 1000, const std::string& client = "c1") {
  UpdateGraph e{client, {task(key, {}, "taskwire::scattered")}, {key}, ""};
  e.scattered.push_back({key, nbytes, std::move(workers)});
  return e;
}
}  // namespace

TEST_CASE("scheduler scatter: scattered data is in memory on its workers at once, never run",
          "[scheduler][scatter]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  const auto& out = h.handle(scattered("s", {"tcp://a:1", "tcp://b:1"}, 4096));
  CHECK(computed(out).empty());
  const auto reports = only<ReportKeyInMemory>(out);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].key == "s");
  CHECK(reports[0].nbytes == 4096);
  CHECK(h.s.task_state("s") == S::memory);
  CHECK(h.s.who_has("s") == std::vector<std::string>{"tcp://a:1", "tcp://b:1"});
  CHECK(h.s.worker("tcp://a:1")->nbytes == 4096);
  CHECK(h.s.worker("tcp://b:1")->nbytes == 4096);

  // A task reading it runs where it is, with no fetch.
  h.submit({task("use", {"s"})}, {"use"});
  REQUIRE(h.s.processing_on("use"));
  // Released by the client once the task that read it is done: freed on both holders.
  h.finish("use");
  const auto& released = h.release({"s"});
  CHECK(freed_on(released, "tcp://a:1") == std::vector<std::string>{"s"});
  CHECK(freed_on(released, "tcp://b:1") == std::vector<std::string>{"s"});
  CHECK(h.s.who_has("s").empty());
}

TEST_CASE("scheduler scatter: holders that left are skipped, and with none the task runs",
          "[scheduler][scatter]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.handle(scattered("kept", {"tcp://gone:1", "tcp://a:1"}));
  CHECK(h.s.task_state("kept") == S::memory);
  CHECK(h.s.who_has("kept") == std::vector<std::string>{"tcp://a:1"});
  const auto& out = h.handle(scattered("lost", {"tcp://gone:1"}));
  CHECK(computed(out) == std::vector<std::string>{"lost"});  // it errs there, saying why

  // Its only holder leaving: the key is lost and its task runs, as for a lost result.
  h.add_worker("tcp://b:1");
  h.handle(RemoveWorker{"tcp://a:1", "gone", false, "", 1});
  CHECK(h.s.who_has("kept").empty());
  CHECK(h.s.processing_on("kept") == std::optional<std::string>("tcp://b:1"));
}

TEST_CASE("scheduler scatter: a key known in memory gains replicas, copies nobody counts are freed",
          "[scheduler][scatter]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  h.handle(scattered("s", {"tcp://a:1"}));
  // The same key scattered again (by another client) to b: b becomes a holder.
  const auto& again = h.handle(scattered("s", {"tcp://b:1"}, 1000, "c2"));
  CHECK(freed_on(again, "tcp://b:1").empty());
  CHECK(h.s.who_has("s") == std::vector<std::string>{"tcp://a:1", "tcp://b:1"});
  CHECK(h.s.wanted_by("c2") == std::vector<std::string>{"s"});

  // A key whose task is processing: the scattered copy is not this worker's to keep.
  h.submit({task("x")}, {"x"});
  const auto on = *h.s.processing_on("x");
  const auto other = on == "tcp://a:1" ? "tcp://b:1" : "tcp://a:1";
  const auto& stray = h.handle(scattered("x", {other}));
  CHECK(freed_on(stray, other) == std::vector<std::string>{"x"});
  CHECK(h.s.task_state("x") == S::processing);
}

TEST_CASE("scheduler scatter: a released key scattered anew is a new attempt, not the run before",
          "[scheduler][scatter]") {
  Harness h;
  h.add_worker("tcp://a:1");
  h.add_worker("tcp://b:1");
  // x runs and is released; its record stays as y's lineage.
  h.submit({task("x"), task("y", {"x"})}, {"y"});
  h.finish("x");
  const auto ran = h.s.attempt("x");
  h.finish("y");
  REQUIRE(h.s.task_state("x") == S::released);
  // Scattered now, x holds other bytes than its run's: anything kept for that run (the
  // server's small results, given by attempt) must not answer for it.
  h.handle(scattered("x", {"tcp://b:1"}));
  CHECK(h.s.task_state("x") == S::memory);
  CHECK(h.s.attempt("x") != ran);
}
