// Inputs still running on a peer (assigned ahead across workers, ComputeTaskEvent::awaited):
// each is asked on its own with a waiting GatherDep, outside the gather slots, so that a
// normal fetch from the same peer is not held behind it; the peer's answer, a "missing" or a
// lost peer end it as for any fetch. Every step validates the invariants.
#include "tests/worker/worker_state_harness.hpp"

using namespace taskwire;
using namespace taskwire::worker;
using namespace taskwire::worker::testing;

namespace {

ComputeTaskEvent awaiting(std::string key,
                          std::vector<std::pair<std::string, std::vector<std::string>>> deps,
                          std::vector<std::string> awaited) {
  auto e = compute(std::move(key), 0, std::move(deps));
  e.awaited = std::move(awaited);
  return e;
}

GatherDepDone answered(std::string worker, std::vector<std::string> keys,
                       std::vector<std::string> missing = {}) {
  auto d = done(std::move(worker), std::move(keys), std::move(missing));
  d.wait = true;
  return d;
}

}  // namespace

TEST_CASE("worker state: an awaited input is asked with its own waiting GatherDep, beside a "
          "normal fetch from the same peer",
          "[worker][state]") {
  WorkerState ws(options());
  auto out = step(ws, awaiting("c", {{"a", {"tcp://p:1"}}, {"b", {"tcp://p:1"}}}, {"a"}));
  auto gathers = only<GatherDep>(out);
  REQUIRE(gathers.size() == 2);
  const auto& wait = gathers[0].wait ? gathers[0] : gathers[1];
  const auto& now = gathers[0].wait ? gathers[1] : gathers[0];
  CHECK(wait.wait);
  CHECK(wait.keys == std::vector<std::string>{"a"});
  CHECK_FALSE(now.wait);
  CHECK(now.keys == std::vector<std::string>{"b"});
  CHECK(ws.status("a") == TaskStatus::flight);

  // b comes first; c waits for a, which comes once the peer's task is done.
  CHECK(executed(step(ws, done("tcp://p:1", {"b"}))).empty());
  CHECK(executed(step(ws, answered("tcp://p:1", {"a"}))) == std::vector<std::string>{"c"});
  step(ws, success("c"));
  CHECK_FALSE(ws.status("a"));
}

TEST_CASE("worker state: an awaited input the peer does not compute ends its task as missing "
          "data, and so does a lost peer",
          "[worker][state]") {
  SECTION("missing") {
    WorkerState ws(options());
    step(ws, awaiting("c", {{"a", {"tcp://p:1"}}}, {"a"}));
    auto out = step(ws, answered("tcp://p:1", {}, {"a"}));
    auto missing = only<SendMissingData>(out);
    REQUIRE(missing.size() == 1);
    CHECK(missing[0].key == "c");
    CHECK(missing[0].missing == "a");
    CHECK(missing[0].from == "tcp://p:1");
    CHECK(missing[0].awaited);  // p did not compute it: not a copy p lost
    CHECK_FALSE(ws.status("c"));
  }
  SECTION("peer lost") {
    WorkerState ws(options());
    step(ws, awaiting("c", {{"a", {"tcp://p:1"}}}, {"a"}));
    auto out = step(ws, GatherDepFailed{"tcp://p:1", "comm lost", ""});
    REQUIRE(only<SendMissingData>(out).size() == 1);
    CHECK_FALSE(only<SendMissingData>(out)[0].awaited);  // p is gone, with what it held
    CHECK_FALSE(ws.status("c"));
    CHECK_FALSE(ws.status("a"));
  }
  SECTION("a normal reply does not end the waiting request") {
    WorkerState ws(options());
    step(ws, awaiting("c", {{"a", {"tcp://p:1"}}, {"b", {"tcp://p:1"}}}, {"a"}));
    step(ws, done("tcp://p:1", {"b"}));
    CHECK(ws.status("a") == TaskStatus::flight);
    step(ws, answered("tcp://q:1", {"a"}));  // from a peer not asked: stale
    CHECK(ws.status("a") == TaskStatus::flight);
  }
}

TEST_CASE("worker state: awaited inputs are asked at most kMaxAwaiting at once",
          "[worker][state]") {
  WorkerState ws(options());
  const std::size_t n = WorkerState::kMaxAwaiting + 3;
  std::vector<Event> events;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string in = fmt::format("in{}", i);
    events.emplace_back(awaiting(fmt::format("c{}", i), {{in, {"tcp://p:1"}}}, {in}));
  }
  auto gathers = only<GatherDep>(step_all(ws, std::move(events)));
  CHECK(gathers.size() == WorkerState::kMaxAwaiting);
  CHECK(ws.fetch_count() == 3);
  // One answered: one more is asked.
  gathers = only<GatherDep>(step(ws, answered("tcp://p:1", {"in0"})));
  REQUIRE(gathers.size() == 1);
  CHECK(gathers[0].wait);
}

TEST_CASE("worker state: a freed task's awaited input is dropped when its answer comes",
          "[worker][state]") {
  WorkerState ws(options());
  step(ws, awaiting("c", {{"a", {"tcp://p:1"}}}, {"a"}));
  step(ws, FreeKeysEvent{{"c"}, ""});
  CHECK(ws.status("a") == TaskStatus::flight);  // the request is out; it stays until answered
  step(ws, answered("tcp://p:1", {"a"}));
  CHECK_FALSE(ws.status("a"));
  CHECK(ws.data().keys().empty());
}
