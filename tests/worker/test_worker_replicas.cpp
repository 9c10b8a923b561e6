// The worker state machine's side of a retirement: copies the scheduler asks for
// (AcquireReplicasEvent) are fetched, kept until freed and reported with add_keys, not as
// task results.
#include "tests/worker/worker_state_harness.hpp"

using namespace taskwire::worker;
using namespace taskwire::worker::testing;

namespace {
AcquireReplicasEvent acquire(std::vector<std::pair<std::string, std::vector<std::string>>> keys) {
  AcquireReplicasEvent e;
  for (auto& [k, holders] : keys) e.who_has[k] = holders;
  return e;
}
}  // namespace

TEST_CASE("worker replicas: a copy asked for is fetched, kept and reported with add_keys",
          "[worker][state][retirement]") {
  WorkerState ws(options());
  auto out = step(ws, acquire({{"x", {"tcp://old:1"}}, {"y", {"tcp://old:1"}}}));
  auto g = only<GatherDep>(out);
  REQUIRE(g.size() == 1);
  CHECK(g[0].worker == "tcp://old:1");
  CHECK(g[0].keys == std::vector<std::string>{"x", "y"});
  out = step(ws, done("tcp://old:1", {"x", "y"}));
  auto added = only<SendAddKeys>(out);
  REQUIRE(added.size() == 1);
  CHECK(added[0].keys == std::vector<std::string>{"x", "y"});
  CHECK(only<SendTaskFinished>(out).empty());  // a copy, not a task's result
  CHECK(ws.status("x") == TaskStatus::memory);  // kept though no task here needs it
  // Used as any held dependency, and kept after.
  out = step(ws, compute("t", 0, {{"x", {"tcp://old:1"}}}));
  CHECK(executed(out) == std::vector<std::string>{"t"});
  step(ws, success("t"));
  CHECK(ws.status("x") == TaskStatus::memory);
  step(ws, FreeKeysEvent{{"x", "y"}, ""});
  CHECK(ws.data().size() == 1);  // t's
}

TEST_CASE("worker replicas: a key held already is reported at once",
          "[worker][state][retirement]") {
  WorkerState ws(options());
  step(ws, compute("x"));
  step(ws, success("x"));
  auto out = step(ws, acquire({{"x", {"tcp://old:1"}}}));
  CHECK(only<GatherDep>(out).empty());
  REQUIRE(only<SendAddKeys>(out).size() == 1);
  CHECK(only<SendAddKeys>(out)[0].keys == std::vector<std::string>{"x"});
}

TEST_CASE("worker replicas: a copy its holder lacks is reported missing and dropped",
          "[worker][state][retirement]") {
  WorkerState ws(options());
  step(ws, acquire({{"x", {"tcp://old:1"}}}));
  auto out = step(ws, done("tcp://old:1", {}, {"x"}));
  auto m = only<SendMissingData>(out);
  REQUIRE(m.size() == 1);
  CHECK(m[0].key.empty());
  CHECK(m[0].missing == "x");
  CHECK(m[0].from == "tcp://old:1");
  CHECK(only<SendAddKeys>(out).empty());
  CHECK(ws.task_count() == 0);
}

TEST_CASE("worker replicas: a dependency on its way becomes a copy kept after its task",
          "[worker][state][retirement]") {
  WorkerState ws(options());
  step(ws, compute("t", 0, {{"x", {"tcp://old:1"}}}));
  REQUIRE(ws.status("x") == TaskStatus::flight);
  step(ws, acquire({{"x", {"tcp://old:1"}}}));
  auto out = step(ws, done("tcp://old:1", {"x"}));
  CHECK(only<SendAddKeys>(out).size() == 1);
  step(ws, success("t"));
  CHECK(ws.status("x") == TaskStatus::memory);
}
