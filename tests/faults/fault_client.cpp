// The client of the fault tests (faults_test.sh), in its own process, finding the scheduler
// through a scheduler file:
//   fault_client poison FILE   tasks that segfault and abort: each future fails within 10 s
//                              naming the task and the signal; the cluster then serves again
//   fault_client chaos FILE [ROUNDS]  ROUNDS (10) rounds of a 2 600-task graph (stencil
//                              layers, a tree reduction, a chain) while the test kills a
//                              worker every 0.3-1 s: every result right
//   fault_client hung FILE     a task that never returns, cancelled: 6 new tasks all run on
//                              the other worker (none waits behind the hung one)
//   fault_client hang FILE     leaves a task that never returns running, and exits
//   fault_client serves FILE [WHEN]  100 tasks, every result right
//   fault_client oneway FILE WA WB  2 x 10 tasks, each adding a result made on worker WB to
//                              one made on WA, run on WA (the test stops WA reaching WB):
//                              preferring WA (allow_other_workers), then pinned there
//                              (workers = {WA}): each is right or errs naming WB, within 60 s
//                              (never a hang); every one free to move is right
//   fault_client retire FILE   800 tasks of 10 ms, their results kept, then a tree of adds
//                              over them, while a worker's --lifetime ends: every result
//                              right; prints "TASKS n", the tasks submitted
//   fault_client shutdown FILE shuts the cluster down (the test calls it once every worker
//                              its nanny restarted is back, not while one is starting)
// Prints "CHECKED <what>" / "FAILED <what>"; exits 0 only if every check passed.
#include "tests/faults/fault_functions.hpp"
#include "tests/launch/checks.hpp"

#include <taskwire/client/client.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

using namespace taskwire;
using launch_checks::check;
using launch_checks::failures;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A task that kills every worker that runs it errs once it has killed 3 of them.
void crash_errs(Client& client, int (*fn)(int), const std::string& name,
                const std::string& signal) {
  auto f = client.submit(fn, 7);
  if (!f.wait_for(std::chrono::seconds(10))) {
    check(false, name + ": the future fails within 10 s");
    return;
  }
  try {
    f.get();
    check(false, name + ": get() throws");
  } catch (const TaskError& e) {
    fmt::print("{}: {}\n", name, e.what());
    check(contains(e.what(), f.key()), name + ": the error names the task");
    check(contains(e.what(), "killed 3 workers"), name + ": the error says it killed 3 workers");
    check(contains(e.what(), signal), name + ": the error names " + signal);
  }
}

void serves(Client& client, const std::string& when) {
  std::vector<int> xs(100);
  for (int i = 0; i < 100; ++i) xs[i] = i;
  const auto ys = client.gather(client.map(fault_fns::inc, xs));
  bool right = ys.size() == xs.size();
  for (std::size_t i = 0; right && i < ys.size(); ++i) right = ys[i] == xs[i] + 1;
  check(right, "the cluster serves new tasks " + when);
}

void poison(Client& client) {
  crash_errs(client, fault_fns::segfault, "segfault", "SIGSEGV");
  serves(client, "after a segfaulting task");
  crash_errs(client, fault_fns::abort_task, "abort", "SIGABRT");
  serves(client, "after an aborting task");
}

// A tree of adds over `leaves` (Dask's tree reduction), and its expected value.
Future<int> tree_sum(Client& client, std::vector<Future<int>> leaves) {
  while (leaves.size() > 1) {
    std::vector<Future<int>> next;
    for (std::size_t i = 0; i + 1 < leaves.size(); i += 2)
      next.push_back(client.submit(fault_fns::slow_add, leaves[i], leaves[i + 1]));
    if (leaves.size() % 2) next.push_back(leaves.back());
    leaves = std::move(next);
  }
  return leaves.front();
}

// Per round: layers of slow adds, each task reading two results of the layer before, then a
// tree reduction of the last layer and a chain of incs: maps, stencils, trees and chains.
void chaos(Client& client, int rounds) {
  constexpr int kWidth = 500, kLayers = 4, kChain = 50;
  for (int round = 0; round < rounds; ++round) {
    std::vector<Future<int>> layer;
    std::vector<long> expected;
    for (int i = 0; i < kWidth; ++i) {
      layer.push_back(client.submit(fault_fns::inc, round * kWidth + i));
      expected.push_back(round * kWidth + i + 1);
    }
    for (int l = 1; l < kLayers; ++l) {
      std::vector<Future<int>> next;
      std::vector<long> next_expected;
      for (int i = 0; i < kWidth; ++i) {
        next.push_back(client.submit(fault_fns::slow_add, layer[i], layer[(i + 1) % kWidth]));
        next_expected.push_back(expected[i] + expected[(i + 1) % kWidth]);
      }
      layer = std::move(next);
      expected = std::move(next_expected);
    }
    auto total = tree_sum(client, layer);
    auto link = client.submit(fault_fns::inc, total);
    for (int i = 1; i < kChain; ++i) link = client.submit(fault_fns::inc, link);
    const auto got = client.gather(layer);
    bool right = true;
    long sum = 0;
    for (int i = 0; i < kWidth; ++i) {
      right = right && got[i] == expected[i];
      sum += expected[i];
    }
    check(right, fmt::format("chaos round {}: {} results right", round + 1, kWidth));
    check(total.get() == sum && link.get() == sum + kChain,
          fmt::format("chaos round {}: the tree reduction and the chain after it are right",
                      round + 1));
  }
}

// Each consumer needs a result held only on `holder` while it prefers (or must run on)
// `consumer`, which cannot reach `holder`.
void oneway_round(Client& client, const std::string& consumer, const std::string& holder,
                  bool pinned) {
  constexpr int kTasks = 10;
  const auto at = [](const std::string& w) { return SubmitOptions{.workers = {w}}; };
  SubmitOptions there = at(consumer);
  there.allow_other_workers = !pinned;
  std::vector<Future<int>> sums;
  for (int i = 0; i < kTasks; ++i) {
    auto far = client.submit(at(holder), fault_fns::inc_block, 1000 + i);
    auto near = client.submit(at(consumer), fault_fns::inc, i);
    sums.push_back(client.submit(there, fault_fns::add_first, far, near));
  }
  const char* how = pinned ? "pinned to" : "preferring";
  int right = 0, erred = 0, named = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int i = 0; i < kTasks; ++i) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!sums[i].wait_for(std::max(left, std::chrono::milliseconds(0)))) continue;
    try {
      right += sums[i].get() == 1000 + i + 1 + i + 1;
    } catch (const TaskError& e) {
      ++erred;
      named += contains(e.what(), holder) ? 1 : 0;
      if (erred == 1) fmt::print("oneway: {} {}: {}\n", how, consumer, e.what());
    }
  }
  fmt::print("oneway: {} {}: {} right, {} erred ({} naming {})\n", how, consumer, right, erred,
             named, holder);
  check(right + erred == kTasks, fmt::format("oneway: every task {} {} ended within 60 s", how,
                                             consumer));
  check(named == erred, "oneway: every error names the worker that could not be reached");
  // One free to move is placed elsewhere once its worker could not fetch from the holder.
  check(pinned || right == kTasks, "oneway: every task free to move is right");
}

// Results held only by the worker that made them, when its lifetime ends mid-graph.
void retire(Client& client) {
  constexpr int kWidth = 800;
  std::vector<Future<int>> layer;
  for (int i = 0; i < kWidth; ++i) layer.push_back(client.submit(fault_fns::paced_inc, i));
  auto total = tree_sum(client, layer);
  const auto got = client.gather(layer);
  bool right = true;
  long sum = 0;
  for (int i = 0; i < kWidth; ++i) {
    right = right && got[i] == i + 1;
    sum += i + 1;
  }
  check(right, fmt::format("retire: {} results right", kWidth));
  check(total.get() == sum, "retire: the tree of adds over them is right");
  fmt::print("TASKS {}\n", 2 * kWidth - 1);
}

void leave_hanging(Client& client) {
  auto stuck = client.submit(fault_fns::hang, 2);
  check(!stuck.wait_for(std::chrono::seconds(1)), "the hung task is running");
}

void hung(Client& client) {
  auto stuck = client.submit(fault_fns::hang, 1);
  check(!stuck.wait_for(std::chrono::seconds(1)), "the hung task has not returned");
  stuck.cancel();
  try {
    stuck.get();
    check(false, "get() of the cancelled task throws");
  } catch (const TaskError& e) {
    check(true, std::string("get() of the cancelled task throws: ") + e.what());
  }
  std::vector<Future<int>> fresh;
  for (int i = 0; i < 6; ++i) fresh.push_back(client.submit(fault_fns::where, i));
  std::vector<int> pids;
  for (auto& f : fresh) {
    // A task placed behind the hung one would wait its 10 minutes.
    if (!f.wait_for(std::chrono::seconds(30))) break;
    pids.push_back(f.get());
  }
  check(pids.size() == fresh.size(), "6 new tasks all ran while the hung task holds its thread");
  bool one_worker = !pids.empty();
  for (int pid : pids) one_worker = one_worker && pid == pids.front();
  check(one_worker, "all 6 ran on the same (idle) worker");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: fault_client poison|chaos|hung|hang|shutdown SCHEDULER_FILE\n");
    return 2;
  }
  const std::string mode = argv[1];
  try {
    auto client = Client::from_scheduler_file(argv[2]);
    if (mode == "poison") poison(client);
    else if (mode == "chaos") chaos(client, argc > 3 ? std::stoi(argv[3]) : 10);
    else if (mode == "hung") hung(client);
    else if (mode == "hang") leave_hanging(client);
    else if (mode == "retire") retire(client);
    else if (mode == "shutdown") client.shutdown();
    else if (mode == "oneway" && argc > 4) {
      oneway_round(client, argv[3], argv[4], false);
      oneway_round(client, argv[3], argv[4], true);
    }
    else if (mode == "serves") serves(client, "(" + std::string(argc > 3 ? argv[3] : "") + ")");
    else throw std::invalid_argument("unknown mode " + mode);
    fmt::print("client: done, {} failures\n", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    fmt::print("FAILED fault_client: {}\n", e.what());
    return 1;
  }
}
