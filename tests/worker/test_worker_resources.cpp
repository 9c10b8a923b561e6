// The worker state machine's own account of its resources: a ready task starts only while
// what it needs is free, the others run around it, and a task needing more than the worker
// offers errs instead of waiting for ever.
#include "tests/worker/worker_state_harness.hpp"

using namespace taskwire;
using namespace taskwire::worker;
using namespace taskwire::worker::testing;

namespace {
ComputeTaskEvent needing(std::string key, runtime::Resources resources, std::int64_t priority) {
  auto e = compute(std::move(key), priority);
  e.spec.resources = std::move(resources);
  return e;
}
WorkerState gpu_worker(unsigned nthreads, double gpus) {
  auto o = options(nthreads);
  o.resources = {{"GPU", gpus}};
  return WorkerState(o);
}
}  // namespace

TEST_CASE("worker resources: two GPU=1 tasks on one GPU run one after the other, others "
          "run around them",
          "[worker][resources]") {
  WorkerState ws = gpu_worker(3, 1);
  auto out = step_all(ws, {needing("g1", {{"GPU", 1}}, 0), needing("g2", {{"GPU", 1}}, 1),
                           compute("x", 2)});
  CHECK(executed(out) == std::vector<std::string>{"g1", "x"});
  CHECK(ws.status("g2") == TaskStatus::ready);
  CHECK(ws.used_resources() == runtime::Resources{{"GPU", 1}});
  out = step(ws, success("x"));
  CHECK(executed(out).empty());  // a thread is free, the GPU is not
  out = step(ws, success("g1"));
  CHECK(executed(out) == std::vector<std::string>{"g2"});
  out = step(ws, success("g2"));
  CHECK(ws.used_resources().empty());
}

TEST_CASE("worker resources: a task freed while running holds its share until it ends",
          "[worker][resources]") {
  WorkerState ws = gpu_worker(2, 1);
  step(ws, needing("g1", {{"GPU", 1}}, 0));
  step(ws, FreeKeysEvent{{"g1"}, ""});
  CHECK(ws.status("g1") == TaskStatus::cancelled);
  auto out = step(ws, needing("g2", {{"GPU", 1}}, 1));
  CHECK(executed(out).empty());
  out = step(ws, success("g1"));
  CHECK(executed(out) == std::vector<std::string>{"g2"});
}

TEST_CASE("worker resources: a failing task gives its share back", "[worker][resources]") {
  WorkerState ws = gpu_worker(1, 2);
  auto out = step_all(ws, {needing("g1", {{"GPU", 2}}, 0), needing("g2", {{"GPU", 1}}, 1)});
  CHECK(executed(out) == std::vector<std::string>{"g1"});
  out = step(ws, ExecuteFailure{"g1", "boom", 0.1, "std::runtime_error", ""});
  CHECK(executed(out) == std::vector<std::string>{"g2"});
}

TEST_CASE("worker resources: a task needing more than the worker offers errs",
          "[worker][resources]") {
  WorkerState ws = gpu_worker(1, 1);
  const auto out = step(ws, needing("t", {{"TPU", 1}}, 0));
  const auto errs = only<SendTaskErred>(out);
  REQUIRE(errs.size() == 1);
  CHECK_THAT(errs[0].message, Catch::Contains("TPU=1") && Catch::Contains("GPU=1"));
  CHECK(executed(out).empty());
}

TEST_CASE("resources: parsing NAME=AMOUNT lists", "[worker][resources]") {
  CHECK(runtime::parse_resources("") == runtime::Resources{});
  CHECK(runtime::parse_resources(" GPU = 2 , MEM=64e9") ==
        runtime::Resources{{"GPU", 2}, {"MEM", 64e9}});
  CHECK_THROWS_WITH(runtime::parse_resources("GPU", "--resources"),
                    Catch::Contains("--resources") && Catch::Contains("NAME=AMOUNT"));
  CHECK_THROWS_WITH(runtime::parse_resources("GPU=-1"), Catch::Contains("positive"));
  CHECK_THROWS_WITH(runtime::parse_resources("GPU=1,GPU=2"), Catch::Contains("twice"));
  CHECK_THROWS(runtime::parse_resources("=3"));
  CHECK(runtime::resources_fit({{"GPU", 1}}, {{"GPU", 2}}, {{"GPU", 1}}));
  CHECK_FALSE(runtime::resources_fit({{"GPU", 1}}, {{"GPU", 2}}, {{"GPU", 1.5}}));
  CHECK_FALSE(runtime::resources_fit({{"TPU", 1}}, {{"GPU", 2}}));
  runtime::Resources used;
  for (int i = 0; i < 10; ++i) runtime::account_resources(used, {{"MEM", 0.1}}, 1);
  for (int i = 0; i < 10; ++i) runtime::account_resources(used, {{"MEM", 0.1}}, -1);
  CHECK(used.empty());  // sums of doubles back to nothing, not a hair off
}
