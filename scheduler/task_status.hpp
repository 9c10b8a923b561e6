#pragma once
// The life of a task as the scheduler sees it; the states and their meaning follow Dask
// distributed's scheduler (distributed/scheduler.py, "Scheduler State Machine").
#include <fmt/format.h>

#include <string_view>

namespace taskwire::scheduler {

enum class TaskStatus {
  released,    ///< known, not wanted right now or not yet scheduled; no data anywhere
  waiting,     ///< wanted; some dependency is not in memory yet
  no_worker,   ///< ready, but no worker is connected to run it
  queued,      ///< ready root task held back because every worker is saturated
  processing,  ///< sent to one worker, which has not answered yet
  /// Sent ahead to the worker that runs (or was assigned) its unfinished dependencies; it
  /// starts there as soon as they finish, with no scheduler round trip, and becomes
  /// processing once the scheduler hears of them (docs/assign-ahead.md).
  assigned,
  memory,      ///< the result is held by one or more workers
  erred,       ///< it or a dependency failed; clients that want it were told
  forgotten,   ///< dropped from the scheduler's state (never seen by queries)
};

/// Dask's spelling ("no-worker"), used in logs and stories.
constexpr std::string_view to_string(TaskStatus s) noexcept {
  switch (s) {
    case TaskStatus::released:
      return "released";
    case TaskStatus::waiting:
      return "waiting";
    case TaskStatus::no_worker:
      return "no-worker";
    case TaskStatus::queued:
      return "queued";
    case TaskStatus::processing:
      return "processing";
    case TaskStatus::assigned:
      return "assigned";
    case TaskStatus::memory:
      return "memory";
    case TaskStatus::erred:
      return "erred";
    case TaskStatus::forgotten:
      return "forgotten";
  }
  return "?";
}

}  // namespace taskwire::scheduler

template <>
struct fmt::formatter<taskwire::scheduler::TaskStatus> : fmt::formatter<std::string_view> {
  auto format(taskwire::scheduler::TaskStatus s, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(taskwire::scheduler::to_string(s), ctx);
  }
};
