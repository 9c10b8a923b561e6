// Client.rebalance in the scheduler state machine (Rebalance): the workers above the mean
// bytes send keys to those below, each move a copy the recipient confirms (add_keys) and then
// the sender's copy freed; the client hears once every move is done or failed.
#include "tests/scheduler/scheduler_harness.hpp"

#include <fmt/format.h>

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;

namespace {
/// Worker a computes n results of `nbytes` each; then b joins, holding nothing.
void all_on_a(Harness& h, int n, std::int64_t nbytes = 1000) {
  h.add_worker("a");
  std::vector<TaskSpec> tasks;
  for (int i = 0; i < n; ++i) tasks.push_back(task(fmt::format("k{}", i)));
  h.submit(tasks);
  for (int i = 0; i < n; ++i) h.finish(fmt::format("k{}", i), nbytes);
  h.add_worker("b");
}

}  // namespace

TEST_CASE("rebalance: half of what one worker holds moves to the empty one, then the client hears",
          "[scheduler][rebalance]") {
  Harness h(without_stealing());
  all_on_a(h, 8);
  auto out = h.handle(Rebalance{"c1", 42, {}, {}, ""});
  const auto moving = replicas_asked(out, "b");
  REQUIRE(moving.size() == 4);
  CHECK(only<ReportRebalance>(out).empty());  // not before b holds them
  CHECK(freed_on(out, "a").empty());

  for (std::size_t i = 0; i + 1 < moving.size(); ++i) {
    out = h.handle(AddKeys{"b", {moving[i]}, ""});
    CHECK(freed_on(out, "a") == std::vector<std::string>{moving[i]});
    CHECK(h.s.who_has(moving[i]) == std::vector<std::string>{"b"});
    CHECK(only<ReportRebalance>(out).empty());
  }
  out = h.handle(AddKeys{"b", {moving.back()}, ""});
  const auto answers = only<ReportRebalance>(out);
  REQUIRE(answers.size() == 1);
  CHECK(answers[0].client == "c1");
  CHECK(answers[0].request_id == 42);
  CHECK(answers[0].moved == 4);
  CHECK(answers[0].moved_bytes == 4000);
  CHECK(answers[0].failed.empty());
  CHECK(h.s.worker("a")->nbytes == 4000);
  CHECK(h.s.worker("b")->nbytes == 4000);
}

TEST_CASE("rebalance: nothing to move is answered at once, and a key moves only while it evens out",
          "[scheduler][rebalance]") {
  Harness h(without_stealing());
  h.add_worker("a");
  h.add_worker("b");
  auto out = h.handle(Rebalance{"c1", 1, {}, {}, ""});
  REQUIRE(only<ReportRebalance>(out).size() == 1);
  CHECK(only<ReportRebalance>(out)[0].moved == 0);

  // One key of 1000 bytes on a: moving it would leave b as far above the mean as a is now.
  h.submit({task("x")});
  h.finish("x", 1000);
  out = h.handle(Rebalance{"c1", 2, {}, {}, ""});
  CHECK(only<AcquireReplicas>(out).empty());
  REQUIRE(only<ReportRebalance>(out).size() == 1);
}

TEST_CASE("rebalance: a recipient that leaves fails its moves, and a key still needed stays",
          "[scheduler][rebalance]") {
  Harness h(without_stealing());
  all_on_a(h, 4);
  // A task on a reads k0: k0 is not moved away from it.
  h.submit({task("use", {"k0"})}, {"use"});
  REQUIRE(h.s.processing_on("use") == std::optional<std::string>("a"));
  auto out = h.handle(Rebalance{"c1", 7, {}, {"a", "b", "nobody"}, ""});
  const auto moving = replicas_asked(out, "b");
  REQUIRE(moving.size() == 2);
  CHECK(std::find(moving.begin(), moving.end(), "k0") == moving.end());

  out = h.handle(RemoveWorker{"b", "gone", false, "", 1});
  const auto answers = only<ReportRebalance>(out);
  REQUIRE(answers.size() == 1);
  CHECK(answers[0].moved == 0);
  REQUIRE(answers[0].failed.size() == 3);  // "nobody", and both moves
  CHECK(answers[0].failed[0] == "worker nobody: not connected");
  CHECK(h.s.who_has(moving[0]) == std::vector<std::string>{"a"});
}

TEST_CASE("rebalance: a move not confirmed within the patience fails, the copy stays put",
          "[scheduler][rebalance]") {
  Harness h(without_stealing());
  all_on_a(h, 2);
  // Heartbeats never time out here: only the copy's patience (10 s) is at stake.
  h.handle(CheckHeartbeats{100, 1e9, ""});
  auto out = h.handle(Rebalance{"c1", 9, {}, {}, ""});
  const auto moving = replicas_asked(out, "b");
  REQUIRE(moving.size() == 1);
  out = h.handle(CheckHeartbeats{105, 1e9, ""});
  CHECK(only<ReportRebalance>(out).empty());
  out = h.handle(CheckHeartbeats{111, 1e9, ""});
  const auto answers = only<ReportRebalance>(out);
  REQUIRE(answers.size() == 1);
  REQUIRE(answers[0].failed.size() == 1);
  CHECK_THAT(answers[0].failed[0], Catch::Contains("did not confirm"));
  // A late confirmation is a replica like any other: nothing is freed on a.
  out = h.handle(AddKeys{"b", {moving[0]}, ""});
  CHECK(freed_on(out, "a").empty());
}
