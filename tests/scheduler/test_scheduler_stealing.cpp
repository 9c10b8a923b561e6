// Work stealing in the scheduler state machine: which task moves, the victim's confirmation
// or refusal, and the races around a steal in flight.
#include "tests/scheduler/scheduler_harness.hpp"

using namespace taskwire::scheduler;
using namespace taskwire::scheduler::testing;

namespace {
std::vector<StealRequest> steals(const Instructions& out) { return only<StealRequest>(out); }

/// Two root tasks x1, x2 on worker a (its two slots), then worker b joins idle: the scheduler
/// asks a for x2, the one a would run last.
void two_on_a_then_b(Harness& h) {
  h.add_worker("a");
  h.submit({task("x1", {}, "slow"), task("x2", {}, "slow")});
  REQUIRE(h.s.processing("a") == std::vector<std::string>{"x1", "x2"});
  const auto& out = h.add_worker("b");
  const auto requests = steals(out);
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].worker == "a");
  CHECK(requests[0].key == "x2");
  CHECK(computed(out).empty());  // nothing moves before a answers
  CHECK(h.s.processing_on("x2") == "a");
}
}  // namespace

TEST_CASE("stealing: a confirmed steal moves the task to the idle worker",
          "[scheduler][stealing]") {
  Harness h;
  two_on_a_then_b(h);
  const auto& out = h.answer_steal("a", "x2", true);
  const auto sent = only<ComputeTask>(out);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].worker == "b");
  CHECK(sent[0].key == "x2");
  CHECK(h.s.processing_on("x2") == "b");
  CHECK(h.s.processing("a") == std::vector<std::string>{"x1"});
  CHECK(steals(out).empty());  // balanced now
  h.finish("x2");
  h.finish("x1");
  CHECK(h.s.task_state("x1") == TaskStatus::memory);
  CHECK(h.s.task_state("x2") == TaskStatus::memory);
}

TEST_CASE("stealing: a refused task stays, is not asked for again, and another one is",
          "[scheduler][stealing]") {
  Harness h;
  two_on_a_then_b(h);
  auto out = h.answer_steal("a", "x2", false);  // x2 runs on a
  CHECK(computed(out).empty());
  CHECK(h.s.processing_on("x2") == "a");
  auto requests = steals(out);
  REQUIRE(requests.size() == 1);  // b is still idle: x1 is worth asking for
  CHECK(requests[0].key == "x1");
  out = h.answer_steal("a", "x1", false);
  CHECK(steals(out).empty());  // both run there: nothing left to ask for
  CHECK(h.s.processing("a") == std::vector<std::string>{"x1", "x2"});
}

TEST_CASE("stealing: an answer to a request for an earlier assignment moves nothing",
          "[scheduler][stealing]") {
  // The victim's answer to a request made before the task erred and was retried there
  // reaches the scheduler after a new request for the retry: taken for the new one, a
  // "refused" ended that steal and the victim's later "stolen" was dropped as stale, so the
  // task was on no worker (simulation seed 2774).
  Harness h;
  two_on_a_then_b(h);
  const auto current = h.s.attempt("x2");
  auto out = h.handle(StealResponse{"a", "x2", true, "", current - 1});
  CHECK(computed(out).empty());
  CHECK(h.s.processing_on("x2") == "a");
  out = h.handle(StealResponse{"a", "x2", false, "", current - 1});
  CHECK(steals(out).empty());  // the request for the current assignment is still pending
  out = h.answer_steal("a", "x2", true);
  REQUIRE(computed(out) == std::vector<std::string>{"x2"});
  CHECK(h.s.processing_on("x2") == "b");
}

TEST_CASE("stealing: a task that finishes while the request is in flight stays where it ran",
          "[scheduler][stealing]") {
  Harness h;
  two_on_a_then_b(h);
  h.finish("x2");
  CHECK(h.s.task_state("x2") == TaskStatus::memory);
  auto out = h.answer_steal("a", "x2", false);
  CHECK(computed(out).empty());
  // Even a (wrong) confirmation of a task no longer processing moves nothing.
  out = h.answer_steal("a", "x2", true);
  CHECK(computed(out).empty());
  CHECK(h.s.who_has("x2") == std::vector<std::string>{"a"});
}

TEST_CASE("stealing: the victim dying with a steal in flight reschedules its tasks once",
          "[scheduler][stealing]") {
  Harness h;
  two_on_a_then_b(h);
  auto out = h.handle(RemoveWorker{"a", "connection lost", false, "", 0});
  CHECK(sorted(computed(out)) == std::vector<std::string>{"x1", "x2"});
  CHECK(h.s.processing_on("x1") == "b");
  CHECK(h.s.processing_on("x2") == "b");
  out = h.answer_steal("a", "x2", true);  // late answer from the dead victim
  CHECK(computed(out).empty());
  CHECK(h.s.processing_on("x2") == "b");
}

TEST_CASE("stealing: the thief dying with a steal in flight places the task anew",
          "[scheduler][stealing]") {
  Harness h;
  two_on_a_then_b(h);
  h.handle(RemoveWorker{"b", "connection lost", false, "", 0});
  const auto& out = h.answer_steal("a", "x2", true);  // a gave it up
  const auto sent = only<ComputeTask>(out);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].worker == "a");
  CHECK(sent[0].key == "x2");
  CHECK(h.s.processing("a") == std::vector<std::string>{"x1", "x2"});
}

TEST_CASE("stealing: a task whose input is costly to move stays with its data",
          "[scheduler][stealing]") {
  for (const std::int64_t nbytes : {std::int64_t{8}, std::int64_t{1'000'000'000}}) {
    Harness h;
    h.add_worker("a");
    h.submit({task("d")});
    h.finish("d", nbytes);
    h.submit({task("y1", {"d"}, "slow"), task("y2", {"d"}, "slow"), task("y3", {"d"}, "slow")},
             {"y1", "y2", "y3"});
    REQUIRE(h.s.processing("a").size() == 3);
    const auto requests = steals(h.add_worker("b"));
    INFO("dependency of " << nbytes << " bytes");
    // Fetching 1 GB at the default 100 MB/s takes longer than a's queue of three
    // half-second tasks; 8 bytes do not.
    CHECK(requests.size() == (nbytes == 8 ? 1u : 0u));
  }
}

TEST_CASE("stealing: off, nothing is ever asked for", "[scheduler][stealing]") {
  Harness h(SchedulerOptions{.work_stealing = false});
  h.add_worker("a");
  h.submit({task("x1", {}, "slow"), task("x2", {}, "slow")});
  const auto& out = h.add_worker("b");
  CHECK(steals(out).empty());
  CHECK(h.s.processing("a") == std::vector<std::string>{"x1", "x2"});
}

TEST_CASE("stealing: short tasks are not worth a steal's round trips", "[scheduler][stealing]") {
  Harness h;
  h.add_worker("a");
  h.submit({task("warm")});
  h.finish("warm", 8, 1e-5);  // "inc" now takes 10 us
  h.submit({task("x1"), task("x2")});
  REQUIRE(h.s.processing("a").size() == 2);
  CHECK(steals(h.add_worker("b")).empty());
}

TEST_CASE("stealing: a task reading a part of a result stays where the whole is",
          "[scheduler][stealing][getitem]") {
  // As "a task whose input is costly to move" with a cheap input, which a normal task of
  // unknown duration leaves for the idle worker; a part task never does: it would fetch the
  // whole for one element (Client::getitem).
  for (const std::string& function : {std::string("slow"), std::string("taskwire::getitem<v>")}) {
    Harness h;
    h.add_worker("a");
    h.submit({task("d")});
    h.finish("d", 8);
    h.submit({task("y1", {"d"}, function), task("y2", {"d"}, function),
              task("y3", {"d"}, function)},
             {"y1", "y2", "y3"});
    REQUIRE(h.s.processing("a").size() == 3);
    INFO(function);
    CHECK(steals(h.add_worker("b")).size() == (function == "slow" ? 1u : 0u));
  }
}

TEST_CASE("placement: parts of a result go where the whole is and not to an idle worker",
          "[scheduler][getitem]") {
  // Before any part reported a duration, a part counted the default half second: the holder
  // looked busy after one, and the next went to the idle worker to fetch the whole (3.2 MB,
  // 32 ms at the default bandwidth) for one element. A plain function still spreads.
  for (const std::string& function : {std::string("slow"), std::string("taskwire::getitem<v>")}) {
    Harness h;
    h.add_worker("a");
    h.submit({task("whole")});
    h.finish("whole", 3'200'000);
    h.add_worker("b");
    h.submit({task("p1", {"whole"}, function), task("p2", {"whole"}, function),
              task("p3", {"whole"}, function), task("p4", {"whole"}, function)},
             {"p1", "p2", "p3", "p4"});
    INFO(function);
    CHECK(h.s.processing("a").size() == (function == "slow" ? 2u : 4u));  // slow: half each
  }
}
