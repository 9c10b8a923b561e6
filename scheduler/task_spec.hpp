#pragma once
// What the scheduler knows about a submitted task. It never sees the payload (the serialized
// function arguments): the server keeps those frames and hands the state machine a SpecRef.
#include <taskwire/runtime/resources.hpp>

#include <fmt/format.h>

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace taskwire::scheduler {

/// Opaque handle to the payload frames the server keeps for a task; chosen by the server,
/// echoed back in ComputeTask and DropTaskSpec.
using SpecRef = std::uint64_t;

/// Order in which ready tasks run; lower runs first. A higher user priority comes first
/// (SubmitOptions::priority, as Dask's), then graphs submitted earlier (Dask's
/// "generation"); within a graph, the client's submission order.
struct Priority {
  std::int32_t user = 0;         ///< TaskSpec::user_priority: higher first
  std::uint64_t generation = 0;  ///< assigned by the scheduler, one per UpdateGraph
  std::int64_t order = 0;        ///< TaskSpec::priority
  friend bool operator==(const Priority&, const Priority&) = default;
  friend std::strong_ordering operator<=>(const Priority& a, const Priority& b) {
    if (a.user != b.user) return b.user <=> a.user;
    if (a.generation != b.generation) return a.generation <=> b.generation;
    return a.order <=> b.order;
  }
};

/// One task of an UpdateGraph.
struct TaskSpec {
  std::string key;
  std::string function;                   ///< registered function name, for duration estimates
  std::vector<std::string> dependencies;  ///< keys whose results are arguments (duplicates ok)
  std::int64_t priority = 0;              ///< the client's submission sequence; lower first
  int retries = 0;                        ///< times the task may be rerun after it errs
  SpecRef spec = 0;
  std::int32_t user_priority = 0;         ///< SubmitOptions::priority; higher first
  /// SubmitOptions::resources, workers, allow_other_workers (see TaskRestrictions).
  runtime::Resources resources = {};
  std::vector<std::string> workers = {};
  bool allow_other_workers = false;
};

/// Why a task is in the erred state. Dependents of a failed task share its failure.
struct TaskFailure {
  std::string blamed_key;  ///< the task that actually raised (the key itself, or a dependency)
  std::string message;     ///< the original message raised by blamed_key
  // Where blamed_key failed, when a worker reported it (task_erred); empty otherwise.
  std::string exception_type = {};  ///< demangled type of what it threw; empty: not a throw
  std::string worker_name = {};
  std::string worker_address = {};
};

}  // namespace taskwire::scheduler

template <>
struct fmt::formatter<taskwire::scheduler::Priority> : fmt::formatter<std::string_view> {
  auto format(const taskwire::scheduler::Priority& p, fmt::format_context& ctx) const {
    if (p.user == 0) return fmt::format_to(ctx.out(), "({}, {})", p.generation, p.order);
    return fmt::format_to(ctx.out(), "(user {}, {}, {})", p.user, p.generation, p.order);
  }
};
