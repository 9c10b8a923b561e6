// The worker state machine without any network: dependencies held or fetched, priority
// order, free_keys, failures, unknown functions. Every step validates the invariants.
#include "tests/worker/temp_dir.hpp"
#include "tests/worker/worker_state_harness.hpp"
#include <taskwire/worker/data_store.hpp>

#include <stdlib.h>

#include <filesystem>

using namespace taskwire;
using namespace taskwire::worker;
using namespace taskwire::worker::testing;
using Catch::Contains;

TEST_CASE("worker state: a task with inline arguments runs at once and is reported finished",
          "[worker][state]") {
  WorkerState ws(options());
  auto out = step(ws, compute("x"));
  auto exec = only<Execute>(out);
  REQUIRE(exec.size() == 1);
  CHECK(exec[0].key == "x");
  CHECK(exec[0].function == "inc");
  REQUIRE(exec[0].args.size() == 1);
  CHECK(runtime::from_frame<int>(exec[0].args[0].bytes()) == 1);
  CHECK(ws.status("x") == TaskStatus::executing);

  out = step(ws, success("x", 2));
  auto fin = only<SendTaskFinished>(out);
  REQUIRE(fin.size() == 1);
  CHECK(fin[0].key == "x");
  CHECK(fin[0].nbytes == runtime::to_frame(2).size());
  CHECK(fin[0].duration_s == 0.25);
  CHECK(ws.status("x") == TaskStatus::memory);
  CHECK(runtime::from_frame<int>(*ws.data().get("x")) == 2);
}

TEST_CASE("worker state: a dependency held here is used as is, without a fetch",
          "[worker][state]") {
  WorkerState ws(options());
  step(ws, compute("a"));
  step(ws, success("a", 7));
  const runtime::Value held = *ws.data().value("a");
  auto out = step(ws, compute("b", 0, {{"a", {"inproc://me"}}}));
  CHECK(only<GatherDep>(out).empty());
  auto exec = only<Execute>(out);
  REQUIRE(exec.size() == 1);
  REQUIRE(exec[0].args.size() == 2);
  CHECK(exec[0].args[1].same_as(held));  // the stored value itself, not a copy
}

TEST_CASE("worker state: missing dependencies are fetched, batched per peer",
          "[worker][state]") {
  WorkerState ws(options());
  auto out = step(ws, compute("c", 0, {{"a", {"tcp://p:1"}}, {"b", {"tcp://p:1"}},
                                       {"d", {"tcp://q:1"}}}));
  CHECK(executed(out).empty());
  auto gathers = only<GatherDep>(out);
  REQUIRE(gathers.size() == 2);
  CHECK(gathers[0].worker == "tcp://p:1");
  CHECK(gathers[0].keys == std::vector<std::string>{"a", "b"});
  CHECK(gathers[1].worker == "tcp://q:1");
  CHECK(gathers[1].keys == std::vector<std::string>{"d"});
  CHECK(ws.status("a") == TaskStatus::flight);
  CHECK(ws.status("c") == TaskStatus::waiting);

  out = step(ws, done("tcp://p:1", {"a", "b"}));
  CHECK(out.empty());
  CHECK(ws.status("a") == TaskStatus::memory);
  out = step(ws, done("tcp://q:1", {"d"}));
  auto exec = only<Execute>(out);
  REQUIRE(exec.size() == 1);
  REQUIRE(exec[0].args.size() == 4);
  CHECK(runtime::from_frame<std::string>(exec[0].args[1].bytes()) == "a");
  CHECK(runtime::from_frame<std::string>(exec[0].args[3].bytes()) == "d");
  CHECK(only<SendTaskFinished>(out).empty());  // replicas are not reported

  step(ws, success("c"));
  // The scheduler does not track replicas: they go once no local task needs them.
  CHECK_FALSE(ws.status("a"));
  CHECK(ws.data().keys() == std::vector<std::string>{"c"});
}

TEST_CASE("worker state: dependencies the scheduler sent along are held as if fetched: no "
          "fetch, and they go once no local task needs them",
          "[worker][state]") {
  WorkerState ws(options());
  step(ws, compute("x", 0, {{"y", {"tcp://q:1"}}}));  // y is being fetched from q
  auto e = compute("c", 0, {{"a", {"tcp://p:1"}}, {"b", {"tcp://p:1"}}, {"y", {"tcp://q:1"}}});
  e.given = {{"a", runtime::to_frame(std::string("a"))}, {"y", runtime::to_frame(std::string("y"))},
             {"z", runtime::to_frame(std::string("z"))}};  // z: not a dependency of c
  auto out = step(ws, std::move(e));
  CHECK(ws.status("a") == TaskStatus::memory);
  CHECK_FALSE(ws.status("z"));  // ignored, not an orphan held for nobody
  CHECK(ws.status("y") == TaskStatus::flight);  // a fetch in flight is left to finish
  auto gathers = only<GatherDep>(out);
  REQUIRE(gathers.size() == 1);  // b only: a came along
  CHECK(gathers[0].keys == std::vector<std::string>{"b"});
  CHECK(only<SendTaskFinished>(out).empty());  // replicas are not reported

  CHECK(executed(step(ws, done("tcp://q:1", {"y"}))) == std::vector<std::string>{"x"});
  step(ws, success("x"));
  out = step(ws, done("tcp://p:1", {"b"}));
  auto exec = only<Execute>(out);
  REQUIRE(exec.size() == 1);
  REQUIRE(exec[0].args.size() == 4);
  CHECK(runtime::from_frame<std::string>(exec[0].args[1].bytes()) == "a");
  step(ws, success("c"));
  CHECK_FALSE(ws.status("a"));  // no local task needs it any more
}

TEST_CASE("worker state: a task over many results fetches each dependency once",
          "[worker][state]") {
  for (int n : {3, 40}) {  // below and above where duplicates are found by hashing
    INFO(n << " dependencies");
    std::vector<std::pair<std::string, std::vector<std::string>>> deps;
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) {
      keys.emplace_back("d");
      keys.back() += std::to_string(i);
      deps.push_back({keys.back(), {"tcp://p:1"}});
    }
    auto e = compute("sum", 0, deps);
    // Arguments may name a dependency again, or a key the dependency list left out.
    e.spec.args.push_back({protocol::ArgSpec::dependency, 0, "d1"});
    e.spec.args.push_back({protocol::ArgSpec::dependency, 0, "extra"});
    e.who_has["extra"] = {"tcp://p:1"};
    WorkerState ws(options());
    auto gathers = only<GatherDep>(step(ws, std::move(e)));
    REQUIRE(gathers.size() == 1);
    keys.push_back("extra");
    CHECK(gathers[0].keys == keys);
    auto out = step(ws, done("tcp://p:1", keys));
    auto exec = only<Execute>(out);
    REQUIRE(exec.size() == 1);
    CHECK(exec[0].args.size() == static_cast<std::size_t>(1 + n + 2));
  }
}

TEST_CASE("worker state: a task carries the span and bytes of its dependencies' transfers",
          "[worker][state]") {
  WorkerState ws(options());
  step(ws, compute("c", 0, {{"a", {"tcp://p:1"}}, {"d", {"tcp://q:1"}}}));
  auto a = done("tcp://p:1", {"a"});
  a.sent_at = 10.0;
  a.arrived_at = 10.5;
  step(ws, std::move(a));
  auto d = done("tcp://q:1", {"d"});
  d.sent_at = 10.25;
  d.arrived_at = 11.0;
  auto exec = only<Execute>(step(ws, std::move(d)));
  REQUIRE(exec.size() == 1);
  CHECK(exec[0].run.transfer_start == 10.0);
  CHECK(exec[0].run.transfer_stop == 11.0);
  CHECK(exec[0].run.transfer_bytes ==
        runtime::to_frame(std::string("a")).size() + runtime::to_frame(std::string("d")).size());
  // What ran it comes back with the result and goes out with the report.
  auto result = success("c");
  result.run = exec[0].run;
  result.run.thread = 3;
  auto finished = only<SendTaskFinished>(step(ws, std::move(result)));
  REQUIRE(finished.size() == 1);
  CHECK(finished[0].run.thread == 3);
  CHECK(finished[0].run.transfer_stop == 11.0);
}

TEST_CASE("worker state: a task whose dependencies are all computed here has no transfer",
          "[worker][state]") {
  WorkerState ws(options());
  step(ws, compute("a"));
  step(ws, success("a"));
  auto exec = only<Execute>(step(ws, compute("b", 0, {{"a", {}}})));
  REQUIRE(exec.size() == 1);
  CHECK(exec[0].run.transfer_bytes == 0);
  CHECK(exec[0].run.transfer_stop == 0);
}

TEST_CASE("worker state: one GatherDep per peer at a time, and keys queued meanwhile go together",
          "[worker][state]") {
  WorkerState ws(options(4));
  auto out = step(ws, compute("t1", 0, {{"a", {"tcp://p:1"}}}));
  REQUIRE(only<GatherDep>(out).size() == 1);
  out = step(ws, compute("t2", 0, {{"b", {"tcp://p:1"}}}));
  CHECK(only<GatherDep>(out).empty());
  out = step(ws, compute("t3", 0, {{"c", {"tcp://p:1"}}}));
  CHECK(only<GatherDep>(out).empty());
  CHECK(ws.status("b") == TaskStatus::fetch);
  out = step(ws, done("tcp://p:1", {"a"}));
  CHECK(executed(out) == std::vector<std::string>{"t1"});
  auto g = only<GatherDep>(out);
  REQUIRE(g.size() == 1);
  CHECK(g[0].keys == std::vector<std::string>{"b", "c"});
}

TEST_CASE("worker state: a key one holder lacks is fetched from the next", "[worker][state]") {
  WorkerState ws(options());
  step(ws, compute("t", 0, {{"a", {"tcp://p:1", "tcp://q:1"}}}));
  auto out = step(ws, done("tcp://p:1", {}, {"a"}));
  auto g = only<GatherDep>(out);
  REQUIRE(g.size() == 1);
  CHECK(g[0].worker == "tcp://q:1");
  CHECK(only<SendMissingData>(out).empty());
}

TEST_CASE("worker state: a dependency no holder has ends the task with missing_data",
          "[worker][state]") {
  WorkerState ws(options());
  SECTION("the only holder does not have it") {
    step(ws, compute("t", 0, {{"a", {"tcp://p:1"}}}));
    auto out = step(ws, done("tcp://p:1", {}, {"a"}));
    auto m = only<SendMissingData>(out);
    REQUIRE(m.size() == 1);
    CHECK(m[0].key == "t");
    CHECK(m[0].missing == "a");
    CHECK(m[0].from == "tcp://p:1");
  }
  SECTION("the reply leaves a requested key out altogether") {
    step(ws, compute("t", 0, {{"a", {"tcp://p:1"}}}));
    auto out = step(ws, done("tcp://p:1", {}));
    CHECK(only<SendMissingData>(out).size() == 1);
  }
  SECTION("no holder is listed at all") {
    auto out = step(ws, compute("t", 0, {{"a", {}}}));
    auto m = only<SendMissingData>(out);
    REQUIRE(m.size() == 1);
    CHECK(m[0].missing == "a");
    CHECK(m[0].from.empty());
  }
  SECTION("only this worker is listed, and it does not hold it") {
    auto out = step(ws, compute("t", 0, {{"a", {"inproc://me"}}}));
    CHECK(only<SendMissingData>(out).size() == 1);
  }
  CHECK(ws.task_count() == 0);
  CHECK(ws.data().size() == 0);
  // The scheduler places it again, with fresh locations: it runs.
  auto out = step(ws, compute("t", 0, {{"a", {"tcp://r:1"}}}));
  REQUIRE(only<GatherDep>(out).size() == 1);
  out = step(ws, done("tcp://r:1", {"a"}));
  CHECK(executed(out) == std::vector<std::string>{"t"});
}

TEST_CASE("worker state: a failed peer is dropped as a holder of every key",
          "[worker][state]") {
  WorkerState ws(options(2));
  step(ws, compute("t1", 0, {{"a", {"tcp://p:1", "tcp://q:1"}}}));
  step(ws, compute("t2", 0, {{"b", {"tcp://p:1"}}}));  // waits: p is busy
  CHECK(ws.status("b") == TaskStatus::fetch);
  auto out = step(ws, GatherDepFailed{"tcp://p:1", "connection refused", ""});
  auto g = only<GatherDep>(out);
  REQUIRE(g.size() == 1);
  CHECK(g[0].worker == "tcp://q:1");
  CHECK(g[0].keys == std::vector<std::string>{"a"});
  auto m = only<SendMissingData>(out);
  REQUIRE(m.size() == 1);
  CHECK(m[0].key == "t2");
  CHECK(m[0].missing == "b");
  CHECK(m[0].from == "tcp://p:1");
}

TEST_CASE("worker state: ready tasks run lowest priority first", "[worker][state]") {
  SECTION("one thread") {
    WorkerState ws(options(1));
    auto out = step_all(ws, {compute("p5", 5), compute("p1", 1), compute("p3", 3)});
    CHECK(executed(out) == std::vector<std::string>{"p1"});
    CHECK(ws.ready_count() == 2);
    out = step(ws, success("p1"));
    CHECK(executed(out) == std::vector<std::string>{"p3"});
    out = step(ws, success("p3"));
    CHECK(executed(out) == std::vector<std::string>{"p5"});
  }
  SECTION("a higher user priority first, whatever the order") {
    WorkerState ws(options(1));
    auto urgent = compute("urgent", 9);
    urgent.spec.user_priority = 5;
    auto low = compute("low", 0);
    low.spec.user_priority = -1;
    auto out = step(ws, compute("busy", 0));
    CHECK(executed(out) == std::vector<std::string>{"busy"});
    out = step_all(ws, {compute("p1", 1), low, urgent});  // arrive while busy runs
    CHECK(executed(out).empty());
    out = step(ws, success("busy"));
    CHECK(executed(out) == std::vector<std::string>{"urgent"});
    out = step(ws, success("urgent"));
    CHECK(executed(out) == std::vector<std::string>{"p1"});
    out = step(ws, success("p1"));
    CHECK(executed(out) == std::vector<std::string>{"low"});
  }
  SECTION("two threads; equal priorities in arrival order") {
    WorkerState ws(options(2));
    auto out = step_all(ws, {compute("a", 2), compute("b", 0), compute("c", 2), compute("d", 1)});
    CHECK(executed(out) == std::vector<std::string>{"b", "d"});
    out = step(ws, success("d"));
    CHECK(executed(out) == std::vector<std::string>{"a"});
    out = step(ws, success("b"));
    CHECK(executed(out) == std::vector<std::string>{"c"});
  }
}

TEST_CASE("worker state: free_keys drops data and work not started", "[worker][state]") {
  WorkerState ws(options(1));
  step_all(ws, {compute("run", 0), compute("queued", 1)});
  REQUIRE(ws.status("queued") == TaskStatus::ready);

  SECTION("a queued task never runs") {
    step(ws, FreeKeysEvent{{"queued"}, ""});
    CHECK_FALSE(ws.status("queued"));
    auto out = step(ws, success("run"));
    CHECK(executed(out).empty());
  }
  SECTION("a running task finishes, its result is dropped and not reported") {
    step(ws, FreeKeysEvent{{"run"}, ""});
    CHECK(ws.status("run") == TaskStatus::cancelled);
    auto out = step(ws, success("run"));
    CHECK(only<SendTaskFinished>(out).empty());
    CHECK(executed(out) == std::vector<std::string>{"queued"});
    CHECK_FALSE(ws.status("run"));
    CHECK_FALSE(ws.data().contains("run"));
  }
  SECTION("a running task freed then assigned again is reported") {
    step(ws, FreeKeysEvent{{"run"}, ""});
    step(ws, compute("run", 0));
    CHECK(ws.status("run") == TaskStatus::executing);
    auto out = step(ws, success("run"));
    CHECK(only<SendTaskFinished>(out).size() == 1);
  }
  SECTION("data in memory is dropped") {
    step(ws, success("run"));
    REQUIRE(ws.data().contains("run"));
    step(ws, FreeKeysEvent{{"run", "never-heard-of"}, ""});
    CHECK_FALSE(ws.data().contains("run"));
    CHECK_FALSE(ws.status("run"));
  }
}

TEST_CASE("worker state: a transfer for a freed task completes and is dropped",
          "[worker][state]") {
  WorkerState ws(options());
  step(ws, compute("t", 0, {{"a", {"tcp://p:1"}}, {"b", {"tcp://q:1"}}}));
  step(ws, FreeKeysEvent{{"t"}, ""});
  CHECK_FALSE(ws.status("t"));
  CHECK(ws.status("a") == TaskStatus::flight);  // cannot be recalled
  auto out = step(ws, done("tcp://p:1", {"a"}));
  CHECK(out.empty());
  CHECK_FALSE(ws.status("a"));
  CHECK(ws.data().size() == 0);
}

TEST_CASE("worker state: a task that throws is reported erred with its type, and a retry "
          "recomputes it",
          "[worker][state]") {
  WorkerState ws(options());
  step(ws, compute("x"));
  auto out =
      step(ws, ExecuteFailure{"x", "boom: division by zero", 0.1, "std::domain_error", "exec-9"});
  auto err = only<SendTaskErred>(out);
  REQUIRE(err.size() == 1);
  CHECK(err[0].key == "x");
  CHECK(err[0].message == "boom: division by zero");
  CHECK(err[0].exception_type == "std::domain_error");
  CHECK(err[0].stimulus_id == "exec-9");
  CHECK(ws.status("x") == TaskStatus::error);
  CHECK(ws.executing_count() == 0);

  out = step(ws, compute("x"));
  CHECK(executed(out) == std::vector<std::string>{"x"});
  step(ws, FreeKeysEvent{{"x"}, ""});
  step(ws, ExecuteFailure{"x", "again", 0, "", ""});
  CHECK(ws.task_count() == 0);
}

TEST_CASE("worker state: an unknown function is a task error naming it and the fix",
          "[worker][state]") {
  WorkerState ws(options());
  auto out = step(ws, compute("u", 0, {{"a", {"tcp://p:1"}}}, "unregistered_fn"));
  CHECK(executed(out).empty());
  CHECK(only<GatherDep>(out).empty());  // nothing is fetched for a task that cannot run
  auto err = only<SendTaskErred>(out);
  REQUIRE(err.size() == 1);
  CHECK(err[0].key == "u");
  CHECK_THAT(err[0].message, Contains("unregistered_fn") && Contains("w1") &&
                                 Contains("TASKWIRE_REGISTER") && Contains("--preload"));
  CHECK(ws.status("u") == TaskStatus::error);
}

TEST_CASE("worker state: a malformed task is a task error, not a crash", "[worker][state]") {
  WorkerState ws(options());
  auto e = compute("m");
  e.spec.args[0].frame_index = 3;
  auto out = step(ws, e);
  auto err = only<SendTaskErred>(out);
  REQUIRE(err.size() == 1);
  CHECK_THAT(err[0].message, Contains("payload frame 3"));

  auto self = compute("s", 0, {{"s", {"tcp://p:1"}}});
  out = step(ws, self);
  REQUIRE(only<SendTaskErred>(out).size() == 1);
  CHECK(step(ws, compute("")).empty());  // no key: nothing to report it against
}

TEST_CASE("worker state: a task assigned again while in memory is reported again",
          "[worker][state]") {
  WorkerState ws(options());
  step(ws, compute("x"));
  step(ws, success("x"));
  auto out = step(ws, compute("x"));
  CHECK(executed(out).empty());
  CHECK(only<SendTaskFinished>(out).size() == 1);
}

TEST_CASE("worker state: a key assigned here while in flight is computed if the fetch fails",
          "[worker][state]") {
  WorkerState ws(options());
  step(ws, compute("t", 5, {{"a", {"tcp://p:1"}}}));
  auto out = step(ws, compute("a", 0));
  CHECK(executed(out).empty());
  CHECK(ws.status("a") == TaskStatus::flight);
  out = step(ws, done("tcp://p:1", {}, {"a"}));
  CHECK(only<SendMissingData>(out).empty());
  CHECK(executed(out) == std::vector<std::string>{"a"});
  out = step(ws, success("a"));
  CHECK(only<SendTaskFinished>(out).size() == 1);  // "a" is assigned here: reported
  CHECK(executed(out) == std::vector<std::string>{"t"});
}

TEST_CASE("worker state: instructions carry their stimulus id", "[worker][state]") {
  WorkerState ws(options());
  auto e = compute("x");
  e.stimulus_id = "compute-task-77";
  auto out = step(ws, e);
  REQUIRE(out.size() == 1);
  CHECK(stimulus_of(out[0]) == "compute-task-77");
  CHECK_THAT(fmt::format("{}", out[0]), Contains("execute 'x'") && Contains("compute-task-77"));
  out = step(ws, success("x"));
  REQUIRE(out.size() == 1);
  CHECK_THAT(stimulus_of(out[0]), Catch::StartsWith("execute-success-"));
}

TEST_CASE("worker state: stale and unexpected events are ignored", "[worker][state]") {
  WorkerState ws(options());
  CHECK(step(ws, success("nobody")).empty());
  CHECK(step(ws, ExecuteFailure{"nobody", "x", 0, "", ""}).empty());
  CHECK(step(ws, done("tcp://p:1", {"a"})).empty());
  CHECK(step(ws, GatherDepFailed{"tcp://p:1", "gone", ""}).empty());
  CHECK(step(ws, FreeKeysEvent{{"nobody"}, ""}).empty());
  CHECK(ws.task_count() == 0);
}

TEST_CASE("worker state: a steal request takes a task that has not started, never a running one",
          "[worker][stealing]") {
  WorkerState ws(options(1));
  auto out = step_all(ws, {compute("a", 0), compute("b", 1)});
  REQUIRE(executed(out) == std::vector<std::string>{"a"});

  out = step(ws, StealRequestEvent{"a", ""});  // running: refused, still running
  auto answers = only<SendStealResponse>(out);
  REQUIRE(answers.size() == 1);
  CHECK_FALSE(answers[0].stolen);
  CHECK(ws.status("a") == TaskStatus::executing);

  out = step(ws, StealRequestEvent{"b", "", 7});  // ready, not started: given up
  answers = only<SendStealResponse>(out);
  REQUIRE(answers.size() == 1);
  CHECK(answers[0].attempt == 7);  // the request's, so the scheduler tells answers apart
  CHECK(answers[0].key == "b");
  CHECK(answers[0].stolen);
  CHECK_FALSE(ws.status("b"));

  // Once a finishes, b (gone) is not run here; a done task is not given up either.
  out = step(ws, success("a"));
  CHECK(executed(out).empty());
  answers = only<SendStealResponse>(step(ws, StealRequestEvent{"a", ""}));
  REQUIRE(answers.size() == 1);
  CHECK_FALSE(answers[0].stolen);
  answers = only<SendStealResponse>(step(ws, StealRequestEvent{"unknown", ""}));
  REQUIRE(answers.size() == 1);
  CHECK_FALSE(answers[0].stolen);
}

TEST_CASE("worker state: a stolen task waiting for data stops waiting for it",
          "[worker][stealing]") {
  WorkerState ws(options(1));
  step(ws, compute("c", 0, {{"d", {"inproc://peer"}}}));
  REQUIRE(ws.status("c") == TaskStatus::waiting);
  auto answers = only<SendStealResponse>(step(ws, StealRequestEvent{"c", ""}));
  REQUIRE(answers.size() == 1);
  CHECK(answers[0].stolen);
  CHECK_FALSE(ws.status("c"));
  // The data arriving now runs nothing.
  CHECK(executed(step(ws, done("inproc://peer", {"d"}))).empty());
}

namespace {
// `key` computed here and spilled, then its spill file deleted (an operator, a /tmp cleaner).
void hold_and_lose_spill_file(WorkerState& ws, DataStore& store,
                              const std::filesystem::path& dir, const std::string& key) {
  step(ws, compute(key));
  step(ws, success(key, 7));
  REQUIRE(store.spill_to(0) > 0);
  for (const auto& f : std::filesystem::directory_iterator(dir)) std::filesystem::remove(f);
}
}  // namespace

TEST_CASE("worker state: a held dependency whose spill file is lost goes back to the scheduler "
          "as missing data, not as an error", "[worker][state][spill]") {
  taskwire::test::TempDir dir;
  {
    auto store = std::make_shared<DataStore>(SpillOptions{dir.path, 0});
    WorkerState ws(options(), store);
    hold_and_lose_spill_file(ws, *store, dir.path, "a");
    auto out = step(ws, compute("b", 0, {{"a", {"inproc://me"}}}));
    CHECK(only<Execute>(out).empty());
    CHECK(only<SendTaskErred>(out).empty());
    auto missing = only<SendMissingData>(out);
    REQUIRE(missing.size() == 1);
    CHECK(missing[0].key == "b");
    CHECK(missing[0].missing == "a");
    CHECK(missing[0].from == "inproc://me");  // this worker's replica is the one to drop
    CHECK_FALSE(store->contains("a"));
    CHECK(ws.task_count() == 0);
    // The scheduler computes `a` again, here or elsewhere, and sends `b` once more.
    step(ws, compute("a"));
    step(ws, success("a", 8));
    out = step(ws, compute("b", 0, {{"a", {"inproc://me"}}}));
    CHECK(executed(out) == std::vector<std::string>{"b"});
  }
}

TEST_CASE("worker state: a result whose spill file a peer found lost is computed again when "
          "assigned here again, not reported as held", "[worker][state][spill]") {
  taskwire::test::TempDir dir;
  {
    auto store = std::make_shared<DataStore>(SpillOptions{dir.path, 0});
    WorkerState ws(options(), store);
    hold_and_lose_spill_file(ws, *store, dir.path, "a");
    CHECK_FALSE(store->get("a"));  // a peer's get_data finds it missing
    auto e = compute("a");
    e.attempt = 9;  // the scheduler computes it again, here
    auto out = step(ws, std::move(e));
    CHECK(only<SendTaskFinished>(out).empty());
    CHECK(executed(out) == std::vector<std::string>{"a"});
    out = step(ws, success("a", 8));
    REQUIRE(only<SendTaskFinished>(out).size() == 1);
    CHECK(store->get("a"));
  }
}
