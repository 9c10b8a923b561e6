#pragma once
// The worker's pure state machine, after Dask distributed's WorkerState: handle(events)
// applies stimuli and returns the instructions they cause, each tagged with its stimulus
// id. It opens no comms, owns no timers or threads and is not thread-safe: the server drives
// it from one strand. The one thing it touches besides itself is the DataStore, which it
// fills and empties (the server reads it to answer get_data).
//
// A task's life here:
//   compute_task -> waiting (dependencies missing) -> ready (all held) -> executing
//                -> memory (result stored, task_finished sent) or error (task_erred sent)
//   dependency   -> fetch (queued) -> flight (GatherDep sent) -> memory, used by dependents,
//                   then dropped once no local task needs it (the scheduler does not track
//                   replicas, so it never frees them itself)
// A freed task that is executing becomes `cancelled`: it finishes and its result is dropped.
// A dependency no listed holder has ends the tasks needing it with SendMissingData (the
// scheduler reschedules them with fresh locations).
#include <taskwire/runtime/resources.hpp>
#include <taskwire/worker/data_store.hpp>
#include <taskwire/worker/worker_events.hpp>
#include <taskwire/worker/worker_instructions.hpp>

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace taskwire::worker {

enum class TaskStatus : std::uint8_t {
  waiting,    ///< assigned here; some dependencies are not held yet
  fetch,      ///< a dependency to fetch from a peer, queued
  flight,     ///< a dependency being fetched (GatherDep outstanding)
  ready,      ///< all dependencies held; queued for a thread, lowest priority first
  executing,  ///< running on a thread
  cancelled,  ///< running on a thread but freed meanwhile: its result will be dropped
  memory,     ///< its data is in the DataStore
  error,      ///< its execution failed; kept until freed or recomputed
};

struct TaskState {
  Key key;
  TaskStatus status = TaskStatus::waiting;
  /// The scheduler assigned this task here (compute_task) and has not freed it: its result
  /// is reported and kept until free_keys.
  bool assigned = false;
  std::uint64_t attempt = 0;  ///< of the latest compute_task for it, echoed in its report
  // How to run it (assigned tasks).
  std::string function;
  std::vector<protocol::ArgSpec> args;
  std::vector<Frame> frames;
  RunOrder priority;          ///< lower runs (or is fetched) first
  runtime::Resources resources;  ///< held while it runs (SubmitOptions::resources)
  std::uint64_t seq = 0;      ///< arrival order: breaks priority ties
  std::set<Key> dependencies;      ///< tasks whose data this one still needs
  std::set<Key> dependents;        ///< local tasks, not yet run, that need this one's data
  std::set<Key> waiting_for_data;  ///< dependencies not held yet
  std::vector<std::string> who_has;  ///< fetch/flight: peers believed to hold it
  /// fetch/flight: a peer in who_has still computes it (ComputeTaskEvent::awaited): asked
  /// with a waiting GatherDep of its own, outside the max_gather_peers slots.
  bool awaited = false;
  std::string coming_from;           ///< flight: the peer asked
  /// flight: a compute_task that arrived while the data was on its way; replayed if the
  /// fetch fails, so the task is computed here instead (Dask's "resumed").
  std::shared_ptr<ComputeTaskEvent> resume;
  std::uint64_t nbytes = 0;
  double duration_s = 0;
  /// How it ran (computed here), or its own transfer (fetched here: `fetched`).
  TaskRun run{};
  bool fetched = false;
  /// A copy the scheduler asked for (AcquireReplicasEvent): reported with SendAddKeys once
  /// held, not as a task's result; kept (assigned) until freed.
  bool replica = false;
  std::string error;
  std::string error_type;  ///< error: the demangled type of what it threw, if it threw
};

struct WorkerStateOptions {
  std::string address;   ///< this worker's contact address: recognised (and skipped) in who_has
  std::string name;      ///< this worker's name, for error messages
  unsigned nthreads = 1; ///< tasks executing at once
  /// What this worker offers tasks (--resources): a ready task starts only while what it
  /// needs is free; the others run around it.
  runtime::Resources resources = {};
  /// Peers with a GatherDep outstanding at once (Dask: transfer_incoming_count_limit).
  std::size_t max_gather_peers = 4;
  /// Keys asked of one peer in one GatherDep (bounds a data_reply's frame count).
  std::size_t max_keys_per_gather = 1000;
  /// Whether a function name is registered; default: runtime::FunctionRegistry::global().
  std::function<bool(const std::string&)> function_known;
};

class WorkerState {
 public:
  /// Awaited keys asked at once (each a request parked at a peer until its task finishes).
  static constexpr std::size_t kMaxAwaiting = 64;

  /// `data` is shared with the server, which answers get_data from it; null: a private one.
  /// Results it holds already become this worker's, in memory (a worker joining again).
  explicit WorkerState(WorkerStateOptions options = {}, std::shared_ptr<DataStore> data = {});
  WorkerState(const WorkerState&) = delete;
  WorkerState& operator=(const WorkerState&) = delete;

  /// Applies the stimuli in order, then starts what has become possible: ready tasks on free
  /// threads (lowest priority first) and fetches from idle peers. Events of one incoming
  /// message go in one call so a burst of tasks starts in priority order. Never throws for
  /// unexpected or stale events (they are ignored).
  Instructions handle(std::vector<Event> events);
  Instructions handle(Event event);

  /// Paused (the worker's memory is past its pause threshold): no task starts and no fetch
  /// begins until unpaused; running ones finish. Unpausing starts nothing by itself: the
  /// next handle() does (an empty event list will do).
  void set_paused(bool paused) noexcept { paused_ = paused; }
  bool paused() const noexcept { return paused_; }

  // Queries, for the server and tests.
  std::optional<TaskStatus> status(const Key& key) const;
  const TaskState* task(const Key& key) const;
  /// Whether this worker computes `key` for the scheduler and has not finished it (waiting,
  /// ready or executing): what a waiting get_data for it waits for.
  bool computes(const Key& key) const {
    const TaskState* ts = task(key);
    return ts && ts->assigned &&
           (ts->status == TaskStatus::waiting || ts->status == TaskStatus::ready ||
            ts->status == TaskStatus::executing);
  }
  std::size_t task_count() const noexcept { return tasks_.size(); }
  std::size_t executing_count() const noexcept { return executing_count_; }
  /// Threads held by tasks freed while running (cancelled): the scheduler no longer counts
  /// them, and must be told (threads_busy) lest it place work behind them.
  std::size_t cancelled_on_threads() const noexcept { return cancelled_count_; }
  std::size_t ready_count() const noexcept { return ready_.size(); }
  /// Resources held by the tasks on threads (executing or cancelled).
  const runtime::Resources& used_resources() const noexcept { return used_resources_; }
  std::size_t fetch_count() const noexcept { return fetch_queue_.size(); }
  /// Peers with a GatherDep outstanding.
  std::vector<std::string> in_flight_workers() const;
  DataStore& data() noexcept { return *data_; }
  const std::shared_ptr<DataStore>& data_store() const noexcept { return data_; }
  const WorkerStateOptions& options() const noexcept { return options_; }

  /// Checks the machine's invariants; throws std::logic_error describing the first broken one.
  void validate() const;
  void validate_resources() const;  ///< validate()'s part on resources

 private:
  using QueueEntry = std::tuple<RunOrder, std::uint64_t, Key>;

  void apply(ComputeTaskEvent& e);
  void hold_given(ComputeTaskEvent& e, const std::vector<Key>& deps);
  void apply(FreeKeysEvent& e);
  void apply(StealRequestEvent& e);
  void apply(GatherDepDone& e);
  void apply(GatherDepFailed& e);
  void apply(ExecuteSuccess& e);
  void apply(ExecuteFailure& e);
  void apply(UpdateDataEvent& e);
  void apply(AcquireReplicasEvent& e);

  // compute-task's steps
  /// A task already known here assigned again: true when that settles it.
  bool reassigned(TaskState& existing, ComputeTaskEvent& e);
  void forget_lost_value(TaskState& ts);
  std::optional<std::string> invalid_spec(const ComputeTaskEvent& e,
                                          const std::vector<Key>& deps) const;
  /// Where each dependency comes from (peers other than this worker); nullopt, with a
  /// SendMissingData emitted, when one that is not here has no holder.
  std::optional<std::map<Key, std::vector<std::string>>> dependency_holders(
      const ComputeTaskEvent& e, const std::vector<Key>& deps);
  void add_dependency(TaskState& ts, const Key& dep, const std::vector<std::string>& holders,
                      bool awaited);
  void received(TaskState& ts, Frame data, const GatherDepDone& e, std::vector<Key>& replicas);
  void awaited_done(GatherDepDone& e);
  bool ask_awaited(TaskState& ts);
  void fail_task(TaskState& ts, std::string message, std::string exception_type = {});
  void transition_to_memory(TaskState& ts, Value data, bool report);
  void finished_running(TaskState& ts);
  void lost_own_data(const Key& key);
  void drop_dependents(const Key& key);
  void drop_with_dependents(const Key& key);  ///< and `key` itself, unassigned
  /// `awaited`: `from` was asked to wait for it and does not compute it (not a lost copy).
  void lost_holder(const Key& key, const std::string& from, bool awaited = false);
  void release(const Key& key);
  void forget(const Key& key);
  void maybe_release(const Key& key);
  void make_ready(TaskState& ts);
  void enqueue_fetch(TaskState& ts);
  void dequeue(TaskState& ts);
  void ensure_communicating();
  void ensure_computing();
  void start_executing(TaskState& ts);
  TaskRun transfers_into(const TaskState& ts) const;
  TaskState* find(const Key& key);
  void emit(Instruction i);

  WorkerStateOptions options_;
  std::shared_ptr<DataStore> data_;
  std::unordered_map<Key, TaskState> tasks_;
  std::set<QueueEntry> ready_;
  std::set<QueueEntry> fetch_queue_;
  std::map<std::string, std::vector<Key>> in_flight_;  ///< peer -> keys of its GatherDep
  std::map<Key, std::string> awaiting_;  ///< awaited keys in flight -> the peer asked
  std::size_t awaited_queued_ = 0;        ///< awaited keys in fetch_queue_
  std::size_t executing_count_ = 0;  ///< executing + cancelled: threads in use
  std::size_t cancelled_count_ = 0;  ///< of those, cancelled
  runtime::Resources used_resources_;  ///< held by the tasks on threads
  std::uint64_t next_seq_ = 0;
  bool paused_ = false;
  std::uint64_t stimulus_counter_ = 0;
  // The call in progress.
  Instructions out_;
  std::string stimulus_;
};

std::string_view to_string(TaskStatus s) noexcept;

/// The task error for a function name this worker does not know: names the function and the
/// worker, and says how to make it known.
std::string unknown_function_message(const std::string& function, const std::string& worker_name,
                                     const std::string& worker_address);

}  // namespace taskwire::worker

template <>
struct fmt::formatter<taskwire::worker::TaskStatus> : fmt::formatter<std::string_view> {
  auto format(taskwire::worker::TaskStatus s, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(taskwire::worker::to_string(s), ctx);
  }
};
