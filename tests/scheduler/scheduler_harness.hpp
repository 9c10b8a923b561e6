#pragma once
// Test helpers for the scheduler state machine: build graphs, play the workers' part, pick
// instructions out of a handle() result. Every event is followed by a full invariant check.
#include <taskwire/scheduler/scheduler_state.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace taskwire::scheduler::testing {

inline TaskSpec task(std::string key, std::vector<std::string> deps = {},
                     std::string function = "inc") {
  TaskSpec t;
  t.key = std::move(key);
  t.function = std::move(function);
  t.dependencies = std::move(deps);
  return t;
}

template <class T>
std::vector<T> only(const Instructions& instructions) {
  std::vector<T> picked;
  for (const Instruction& i : instructions) {
    if (const T* t = std::get_if<T>(&i)) picked.push_back(*t);
  }
  return picked;
}

template <class T>
std::vector<std::string> keys_of(const std::vector<T>& items) {
  std::vector<std::string> keys;
  for (const T& i : items) keys.push_back(i.key);
  return keys;
}

/// Keys sent to workers for computation, in order.
inline std::vector<std::string> computed(const Instructions& instructions) {
  return keys_of(only<ComputeTask>(instructions));
}

/// All keys freed on `worker` by these instructions.
inline std::vector<std::string> freed_on(const Instructions& instructions,
                                         const std::string& worker) {
  std::vector<std::string> keys;
  for (const FreeKeys& f : only<FreeKeys>(instructions)) {
    if (f.worker == worker) keys.insert(keys.end(), f.keys.begin(), f.keys.end());
  }
  return keys;
}

inline std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// The placement rules without assign ahead: a dependent waits for its inputs to finish (the
/// tests of those rules; assign ahead has tests of its own).
inline SchedulerOptions waiting_for_inputs() {
  SchedulerOptions o;
  o.assign_ahead = 0;
  return o;
}

/// The keys `worker` is asked to fetch a copy of (AcquireReplicas), sorted.
inline std::vector<std::string> replicas_asked(const Instructions& out,
                                               const std::string& worker) {
  std::vector<std::string> keys;
  for (const AcquireReplicas& a : only<AcquireReplicas>(out)) {
    if (a.worker != worker) continue;
    for (const DependencyLocation& k : a.keys) keys.push_back(k.key);
  }
  return sorted(keys);
}

/// Work stealing off: the steal requests and copies a test sees are its own subject's.
inline SchedulerOptions without_stealing() {
  SchedulerOptions o;
  o.work_stealing = false;
  return o;
}

struct Harness {
  SchedulerState s;
  Instructions last;
  std::int64_t next_priority = 0;

  explicit Harness(SchedulerOptions options = {}) : s(options) {}

  const Instructions& handle(const Event& event) {
    last = s.handle(event);
    const std::string problem = s.validate();
    INFO("after " << std::visit([](const auto& e) { return std::string(e.kind); }, event));
    REQUIRE(problem == "");
    return last;
  }

  const Instructions& add_worker(const std::string& address, int nthreads = 1, double now = 0) {
    return handle(AddWorker{address, nthreads, "", now, ""});
  }

  /// Submits tasks (priorities in the order given); by default the client wants every key.
  const Instructions& submit(std::vector<TaskSpec> tasks, std::vector<std::string> wanted = {},
                             const std::string& client = "c1") {
    if (wanted.empty()) {
      for (const TaskSpec& t : tasks) wanted.push_back(t.key);
    }
    for (TaskSpec& t : tasks) t.priority = next_priority++;
    return handle(UpdateGraph{client, std::move(tasks), std::move(wanted), ""});
  }

  const Instructions& finish(const std::string& key, std::int64_t nbytes = 8,
                             double duration = 0.01) {
    const auto worker = s.processing_on(key);
    INFO("finishing " << key);
    REQUIRE(worker);
    return handle(TaskFinished{*worker, key, nbytes, duration, "", s.attempt(key)});
  }

  /// `worker`'s answer to a steal request for `key`'s current assignment.
  const Instructions& answer_steal(const std::string& worker, const std::string& key,
                                   bool stolen) {
    return handle(StealResponse{worker, key, stolen, "", s.attempt(key)});
  }

  const Instructions& fail(const std::string& key, const std::string& message = "boom",
                           const std::string& exception_type = "std::runtime_error") {
    const auto worker = s.processing_on(key);
    INFO("failing " << key);
    REQUIRE(worker);
    return handle(TaskErred{*worker, key, message, exception_type, "", s.attempt(key)});
  }

  const Instructions& release(std::vector<std::string> keys, const std::string& client = "c1") {
    return handle(ClientReleasesKeys{client, std::move(keys), ""});
  }

  /// Plays every worker until nothing is processing: each round finishes, in priority order,
  /// every task processing at its start. Returns the keys in completion order.
  std::vector<std::string> run_all(std::int64_t nbytes = 8) {
    std::vector<std::string> order;
    for (;;) {
      std::vector<std::pair<std::string, std::string>> round;  // worker, key
      for (const WorkerInfo& w : s.workers()) {
        for (std::string& key : s.processing(w.address)) round.emplace_back(w.address, key);
      }
      if (round.empty()) return order;
      for (auto& [worker, key] : round) {
        // One assigned ahead starts only once its inputs have finished.
        if (s.task_state(key) != TaskStatus::processing) continue;
        last = s.handle(TaskFinished{worker, key, nbytes, 0.01, "", s.attempt(key)});
        order.push_back(key);
      }
    }
  }
};

}  // namespace taskwire::scheduler::testing
