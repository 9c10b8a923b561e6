#pragma once
// The scheduler state machine's internal records (Dask's TaskState, WorkerState,
// ClientState). Only SchedulerState creates and mutates them; they are declared here so its
// header can hold them by value. Outside code uses SchedulerState's query API instead.
//
// Records point at each other with raw pointers. A record that leaves the state (a forgotten
// task, a removed worker) is kept alive until the end of the handle() call that removed it, so
// pointers held by pending recommendations stay valid; after that call no live record points
// at it.
#include <taskwire/scheduler/ptr_set.hpp>
#include <taskwire/scheduler/task_spec.hpp>
#include <taskwire/scheduler/task_status.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace taskwire::scheduler {

struct WorkerState;
struct ClientState;

/// A function name, shared by every task that calls it (SchedulerState interns each name
/// once): a million-task map held a million copies of the same name. Reads as the string.
class FunctionName {
 public:
  FunctionName() = default;
  explicit FunctionName(const std::string* interned) : name_(interned) {}
  operator const std::string&() const noexcept { return name_ ? *name_ : empty(); }
  operator std::string_view() const noexcept { return static_cast<const std::string&>(*this); }
  /// The interned string's address: one per name, so a map keyed by it hashes a pointer.
  const std::string* id() const noexcept { return &static_cast<const std::string&>(*this); }

 private:
  static const std::string& empty() {
    static const std::string none;
    return none;
  }
  const std::string* name_ = nullptr;
};

/// Where a task may run (SubmitOptions::resources, workers, allow_other_workers); a task
/// without any holds none (most tasks: they pay one pointer).
struct TaskRestrictions {
  runtime::Resources resources;       ///< consumed on its worker while processing there
  std::vector<std::string> workers;   ///< addresses or names; empty: any
  bool loose = false;                 ///< `workers` is a preference (allow_other_workers)
};

struct TaskState {
  std::string key;
  FunctionName function;
  SpecRef spec = 0;
  Priority priority;
  std::unique_ptr<TaskRestrictions> restrictions;  ///< null: it may run anywhere
  int retries = 0;
  TaskStatus state = TaskStatus::released;
  std::int64_t nbytes = -1;  ///< -1 until a worker reported the size

  std::vector<TaskState*> dependencies;  ///< unique, in spec order
  PtrSet<TaskState> dependents;
  PtrSet<TaskState> waiting_on;  ///< dependencies not in memory (waiting and assigned)
  PtrSet<TaskState> waiters;     ///< dependents that still need this result
  std::vector<WorkerState*> who_has;          ///< replicas (memory only)
  WorkerState* processing_on = nullptr;       ///< processing and assigned only
  /// Its latest assignment (ComputeTask::attempt); reports of others are stale.
  std::uint64_t attempt = 0;
  std::int64_t fetch_bytes = 0;               ///< dependency bytes its worker must fetch
  std::vector<ClientState*> who_wants;

  // Work stealing (processing only; reset when it leaves processing_on).
  bool steal_pending = false;           ///< a StealRequest awaits its victim's answer
  bool steal_refused = false;           ///< its worker said it runs (or ran) it: not again
  // Here, between the bools and the pointer, not next to `killed`: in the padding (a task
  // record of 392 bytes takes a 448-byte allocator slot, one of 384 a 384-byte one).
  int suspicious = 0;                          ///< workers that died while running it
  WorkerState* steal_thief = nullptr;   ///< where it goes if confirmed; null: the thief left

  std::vector<std::string> killed;             ///< names of the workers it killed, in order
  bool has_lost_dependencies = false;          ///< a dependency was forgotten: can never run
  // Here, next to another bool, not after `spec`: in the padding (a million-task graph holds
  // a million of these; 8 bytes more cross an allocator size class).
  /// The server still holds the spec's payload (the arguments). Dropped once the task can
  /// never run again: forgotten, or erred for good (retries happen before erred).
  bool spec_held = true;
  /// A worker it was assigned ahead to could not get an input that still ran elsewhere (its
  /// producer's worker did not know it yet, or it left): not sent ahead across workers again.
  bool ahead_across_missed = false;
  std::shared_ptr<const TaskFailure> failure;  ///< set once it or a dependency erred
  std::vector<std::string> erred_on;  ///< workers that reported it erred (to free it there)

  std::optional<TaskStatus> recommended;  ///< pending recommendation (see run_transitions)
};

struct WorkerState {
  std::string address;
  std::string name;
  int nthreads = 1;
  /// Threads held by tasks the scheduler no longer counts there (cancelled or released while
  /// running, and still running): as the worker last said, or assumed on release.
  int busy_threads = 0;
  double last_seen = 0;
  bool removed = false;
  bool nanny = false;  ///< a nanny reports its death (WorkerDied)
  /// Its memory is past its pause threshold (WorkerStatusChanged): nothing new goes there.
  bool paused = false;
  /// Retiring (RetireWorker): nothing new goes there, what it has not started is asked
  /// back, its only copies are copied elsewhere; closed once it runs and keeps nothing.
  bool retiring = false;
  /// It asked to retire itself (its --lifetime): retired whatever it takes, never given up
  /// (a retirement only clients asked for is, when no other worker can take its data).
  bool retire_self = false;
  bool drain_due = false;  ///< retiring: something changed, look again (retirement.cpp)
  runtime::Resources resources;       ///< what it offers
  runtime::Resources used_resources;  ///< held by the restricted tasks processing there

  PtrSet<TaskState> processing;  ///< processing and assigned tasks sent here
  std::size_t assigned = 0;      ///< of those, assigned ahead (SchedulerOptions::assign_ahead)
  PtrSet<TaskState> has_what;
  std::int64_t nbytes = 0;       ///< bytes of the results it holds
  std::int64_t fetch_bytes = 0;  ///< dependency bytes its processing tasks must fetch
  /// For occupancy; keyed by FunctionName::id().
  std::unordered_map<const std::string*, int> processing_by_function;
  PtrSet<TaskState> incoming_steals;  ///< tasks a pending steal would move here
  bool listed_idle = false;           ///< in SchedulerState::idle_
  bool listed_saturated = false;      ///< in SchedulerState::saturated_

  std::uint64_t placement_epoch = 0;  ///< scratch for decide_worker
  std::int64_t held_dependency_bytes = 0;
};

struct ClientState {
  std::string id;
  PtrSet<TaskState> wants_what;
};

/// Lower priority first; key breaks ties so that ordered sets are deterministic.
struct ByPriority {
  bool operator()(const TaskState* a, const TaskState* b) const {
    if (a->priority != b->priority) return a->priority < b->priority;
    return a->key < b->key;
  }
};

/// The set's tasks, lowest priority first (a deterministic order for instructions and reports).
inline std::vector<TaskState*> by_priority(const PtrSet<TaskState>& set) {
  std::vector<TaskState*> v(set.begin(), set.end());
  std::sort(v.begin(), v.end(), ByPriority{});
  return v;
}

/// Orders workers by address, so that stealing visits them deterministically.
struct ByAddress {
  bool operator()(const WorkerState* a, const WorkerState* b) const {
    return a->address < b->address;
  }
};

/// Lets maps keyed by std::string be searched with a std::string_view.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

}  // namespace taskwire::scheduler
