#pragma once
// Helpers for the worker state machine tests: build compute_task events, pick instructions
// out of a handle() result, and check the machine's invariants after every step.
#include <taskwire/runtime/serialize.hpp>
#include <taskwire/worker/worker_state.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

namespace taskwire::worker::testing {

inline WorkerStateOptions options(unsigned nthreads = 1) {
  WorkerStateOptions o;
  o.address = "inproc://me";
  o.name = "w1";
  o.nthreads = nthreads;
  o.function_known = [](const std::string& name) { return name != "unregistered_fn"; };
  return o;
}

/// A task `key` calling `function` on one inline int argument followed by its dependencies,
/// each held by the peers listed.
inline ComputeTaskEvent compute(std::string key, std::int64_t priority = 0,
                                std::vector<std::pair<std::string, std::vector<std::string>>>
                                    deps = {},
                                std::string function = "inc") {
  ComputeTaskEvent e;
  e.spec.key = std::move(key);
  e.spec.function = std::move(function);
  e.spec.priority = priority;
  e.spec.args.push_back({protocol::ArgSpec::frame, 0, ""});
  e.frames.push_back(runtime::to_frame(1));
  for (auto& [d, holders] : deps) {
    e.spec.args.push_back({protocol::ArgSpec::dependency, 0, d});
    e.spec.dependencies.push_back(d);
    if (!holders.empty()) e.who_has[d] = holders;
  }
  return e;
}

template <class T>
std::vector<T> only(const Instructions& instructions) {
  std::vector<T> picked;
  for (const auto& i : instructions)
    if (const T* t = std::get_if<T>(&i)) picked.push_back(*t);
  return picked;
}

inline std::vector<std::string> executed(const Instructions& instructions) {
  std::vector<std::string> keys;
  for (const auto& e : only<Execute>(instructions)) keys.push_back(e.key);
  return keys;
}

/// handle() then validate(): every step of every test checks the invariants.
template <class E>
Instructions step(WorkerState& ws, E event) {
  auto out = ws.handle(Event(std::move(event)));
  REQUIRE_NOTHROW(ws.validate());
  return out;
}

inline Instructions step_all(WorkerState& ws, std::vector<Event> events) {
  auto out = ws.handle(std::move(events));
  REQUIRE_NOTHROW(ws.validate());
  return out;
}

inline ExecuteSuccess success(std::string key, int value = 42) {
  return ExecuteSuccess{std::move(key), runtime::to_frame(value), 0.25, ""};
}

inline GatherDepDone done(std::string worker, std::vector<std::string> keys,
                          std::vector<std::string> missing = {}) {
  GatherDepDone d;
  d.worker = std::move(worker);
  for (auto& k : keys) d.data.emplace_back(k, runtime::to_frame(k));
  d.missing = std::move(missing);
  return d;
}

}  // namespace taskwire::worker::testing
