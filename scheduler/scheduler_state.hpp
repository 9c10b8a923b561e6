#pragma once
// The scheduler's pure state machine, after Dask distributed's SchedulerState: handle(event)
// applies one stimulus and returns the instructions it causes, each tagged with the
// stimulus id. It does no I/O, owns no timers or threads and is not thread-safe: the server
// drives it from one strand and turns the instructions into messages.
//
// Task states: released, waiting, no-worker, queued, processing, memory, erred, forgotten
// (see task_status.hpp). Placement: a task with dependencies goes to the worker where it
// is expected to start soonest, counting the worker's queued work (occupancy / nthreads) and
// the time to fetch the dependency bytes it lacks (bandwidth); in practice the worker holding
// most dependency bytes unless it is much busier. Root tasks (no dependencies) are queued on
// the scheduler and released to the least loaded worker that has fewer than
// ceil(nthreads * worker_saturation) tasks processing (more for short tasks, see
// SchedulerOptions::short_task_cover_seconds). Work stealing (stealing.cpp) moves tasks not
// yet started from saturated workers to idle ones.
#include <taskwire/scheduler/events.hpp>
#include <taskwire/scheduler/instructions.hpp>
#include <taskwire/scheduler/records.hpp>
#include <taskwire/runtime/histogram.hpp>

#include <array>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace taskwire::scheduler {

struct SchedulerOptions {
  /// Tasks in flight per worker thread before root tasks wait in the scheduler's queue
  /// (Dask's distributed.scheduler.worker-saturation). Infinity disables queuing: root tasks
  /// are then placed at once by occupancy.
  double worker_saturation = 1.1;
  /// Short root tasks get more slots than worker_saturation gives: enough to keep each thread
  /// busy for this many seconds by their expected duration, so that a worker does not idle
  /// for a scheduler round trip after every couple of microsecond-long tasks. Stealing does
  /// not do this: it moves tasks to an idle worker after the fact, at a round trip's cost
  /// per task, which is the very gap these slots cover. 0 disables.
  double short_task_cover_seconds = 0.002;
  /// The most slots per thread short tasks can get that way.
  int max_short_task_slots = 64;
  /// Tasks per worker thread that may be assigned ahead: sent to the worker that runs all
  /// their unfinished dependencies before those finish, so that they start there with no
  /// scheduler round trip (Charm++'s and PaRSEC's producer -> consumer release). 0: off.
  /// 4 is the measured choice: docs/assign-ahead.md. Known-short tasks get
  /// as many as cover short_task_cover_seconds, as root tasks do ("The window in time").
  int assign_ahead = 4;
  /// Assign ahead also when the unfinished inputs run on other workers: the task goes to
  /// one of theirs (the least loaded), and its worker asks the others for their inputs
  /// before they finish (a waiting get_data), so that each result travels producer ->
  /// consumer in one message with no scheduler on the way (docs/assign-ahead.md, "Assign
  /// ahead across workers").
  bool assign_ahead_across_workers = false;
  /// Move tasks not yet started from saturated workers to idle ones, the victim confirming
  /// (Dask's distributed.scheduler.work-stealing).
  bool work_stealing = true;
  /// A task errs once this many workers died while running it (a task that crashes its
  /// worker, however often it is retried elsewhere, must not take the cluster down).
  /// Expected removals do not count, nor, when a nanny reported the death, tasks that were
  /// only queued there.
  int allowed_failures = 3;
  /// A task errs once its worker failed this many times to fetch the same input from the
  /// same holder while the scheduler still counts that holder alive (MissingData): the two
  /// workers cannot reach each other (a one-way partition, a firewall). Each failure drops
  /// that replica and computes the input again, which heals it when the input or the task
  /// lands elsewhere; pinned (restrictions) or placed the same way again, it would go round
  /// for ever.
  int allowed_fetch_failures = 3;
  /// How long the tasks of a worker with a nanny wait, after its connection is lost, for the
  /// nanny's report (WorkerDied) of how it died and what it ran; then they are rescheduled
  /// all the same, every one of them blamed. Checked on CheckHeartbeats.
  double death_report_seconds = 1.0;
  /// Tasks that wait for a worker (no-worker, queued) err once no worker has been connected
  /// for this many seconds (Dask's distributed.scheduler.no-workers-timeout); 0: they wait
  /// as long as it takes (the default, as Dask's), and the log says so.
  double no_workers_timeout = 0;
  /// Seconds assumed for a function that never reported a duration (Dask: 0.5 s).
  double default_task_duration = 0.5;
  /// Bytes per second, to weigh fetching dependencies against waiting for a busy worker.
  double bandwidth = 100e6;
  /// Size assumed for a result whose size is not known yet (Dask: 1 kB).
  std::int64_t default_nbytes = 1000;
  /// Most tasks held at once; an UpdateGraph that would exceed it is refused and its wanted
  /// keys reported erred.
  std::size_t max_tasks = 1'000'000;
  /// Transitions kept for story(); 0 keeps none.
  std::size_t transition_log_length = 1000;
};

struct WorkerInfo {
  std::string address;
  std::string name;
  int nthreads = 1;
  std::size_t processing = 0;  ///< tasks sent and not yet answered
  std::size_t has_what = 0;    ///< keys held
  std::int64_t nbytes = 0;     ///< bytes held
  double occupancy = 0;        ///< expected seconds of queued work, all threads together
  double last_seen = 0;
  runtime::Resources resources = {};       ///< what it offers
  runtime::Resources used_resources = {};  ///< held by the tasks placed there
  bool paused = false;
  bool retiring = false;  ///< RetireWorker: it leaves once its only copies are elsewhere
};

/// A no-worker task that no connected worker can ever run, and what it needs.
struct UnrunnableInfo {
  std::string key;
  std::string needs;
};

inline constexpr std::size_t kTaskStatusCount = static_cast<std::size_t>(TaskStatus::forgotten) + 1;

/// What the dashboard and /metrics report, kept up to date by the transitions themselves
/// (a scrape must not walk every task). Counters only grow.
struct TaskCounts {
  std::array<std::size_t, kTaskStatusCount> by_state{};  ///< live tasks; forgotten unused
  std::uint64_t completed = 0;  ///< processing -> memory
  std::uint64_t erred = 0;      ///< transitions into erred (dependents of a failure too)
  std::uint64_t retried = 0;    ///< a worker's error answered by running the task again
  /// Keys in memory whose every copy was lost with a worker (or missing): computed again if
  /// still needed. A retirement that works loses none.
  std::uint64_t lost = 0;
  std::uint64_t workers_retired = 0;  ///< workers closed after their retirement (RetireWorker)
  std::size_t count(TaskStatus s) const { return by_state[static_cast<std::size_t>(s)]; }
};
struct FunctionMetrics {
  TaskCounts tasks;
  runtime::DurationHistogram durations;  ///< as the workers reported them
};

struct TransitionRecord {
  std::string key;
  TaskStatus start;
  TaskStatus finish;
  std::string stimulus_id;
};

class SchedulerState {
 public:
  explicit SchedulerState(SchedulerOptions options = {});
  ~SchedulerState();
  SchedulerState(const SchedulerState&) = delete;
  SchedulerState& operator=(const SchedulerState&) = delete;

  /// Applies one stimulus; returns what the server must do, in order. Never throws for
  /// unknown keys, workers or clients (stale messages are normal): they are ignored or
  /// answered (e.g. FreeKeys), with a debug LogEvent.
  Instructions handle(const Event& event);

  // ---- queries (for the server and tests) ----
  bool contains(std::string_view key) const;
  std::size_t task_count() const { return tasks_.size(); }
  /// nullopt when the key is unknown or forgotten.
  std::optional<TaskStatus> task_state(std::string_view key) const;
  std::vector<std::string> who_has(std::string_view key) const;  ///< sorted addresses
  std::optional<std::string> processing_on(std::string_view key) const;
  /// The attempt of its latest assignment (ComputeTask::attempt); 0 if never assigned.
  std::uint64_t attempt(std::string_view key) const;
  std::optional<std::int64_t> nbytes(std::string_view key) const;
  std::optional<TaskFailure> failure(std::string_view key) const;
  /// Keys processing on / held by a worker, sorted by priority.
  std::vector<std::string> processing(std::string_view worker) const;
  std::vector<std::string> has_what(std::string_view worker) const;
  std::vector<WorkerInfo> workers() const;  ///< sorted by address
  std::optional<WorkerInfo> worker(std::string_view address) const;
  std::vector<std::string> wanted_by(std::string_view client) const;  ///< sorted keys
  std::size_t queued_count() const { return queued_.size(); }
  /// How many tasks are in each state (states with none included). Linear in the tasks.
  std::map<TaskStatus, std::size_t> tasks_by_state() const;
  /// Dead workers whose tasks wait for their nanny's report (WorkerDied).
  std::size_t awaiting_death_reports() const { return dying_.size(); }
  std::size_t no_worker_count() const { return unrunnable_.size(); }
  /// No-worker tasks that no connected worker could run even if idle (a resource none has,
  /// workers= naming none connected; any task while no worker is), best priority first, at
  /// most `limit`. Linear in the no-worker tasks.
  std::vector<UnrunnableInfo> unrunnable(std::size_t limit) const;
  /// Expected seconds for one call of `function`: the average of reported durations.
  double expected_duration(std::string_view function) const;
  /// Before `function` reported a duration: SchedulerOptions::default_task_duration, or a
  /// few microseconds for a part of a result (Client::getitem).
  double unmeasured_duration(std::string_view function) const;
  double expected_duration(FunctionName function) const;
  /// The transitions of `key` still in the log, oldest first.
  std::vector<TransitionRecord> story(std::string_view key) const;
  /// Checks the invariants between records; returns "" or a description of the first
  /// violation. Linear in the size of the state: for tests.
  std::string validate() const;
  const SchedulerOptions& options() const { return options_; }
  const TaskCounts& task_counts() const { return counts_; }
  /// Per function name, in no particular order.
  std::vector<std::pair<std::string, FunctionMetrics>> function_metrics() const;
  std::size_t client_count() const { return clients_.size(); }
  /// A connected worker's threads (1 if unknown): cheaper than worker().
  int nthreads_of(std::string_view address) const;
  /// The function of a live task ("" if unknown).
  std::string_view function_of(std::string_view key) const;

 private:
  // stimuli (client_events.cpp, worker_events.cpp)
  void on(const UpdateGraph& e);
  // update_graph's steps, in order (client_events.cpp)
  class GraphScan;  ///< which specs become tasks, and why the others cannot
  void refuse_over_limit(GraphScan& scan);
  /// Creates tasks for `specs` (dependencies first); returns them, to wait.
  std::vector<TaskState*> add_tasks(const std::vector<const TaskSpec*>& specs);
  /// The client wants each of e.wanted: reported at once if done or impossible, else made
  /// to wait (a known, released key is appended to `to_wait`).
  void add_wants(const UpdateGraph& e, ClientState* cs, const GraphScan& scan,
                 std::vector<TaskState*>& to_wait);
  /// Puts e.scattered's keys in memory on their workers (out of `to_wait`).
  void place_scattered(const UpdateGraph& e, std::vector<TaskState*>& to_wait);
  /// Drops the specs of `e` that did not become tasks (culled, refused, already known).
  void drop_unused_specs(const UpdateGraph& e);
  /// Tells the server to drop the task's payload (see TaskState::spec_held).
  void drop_spec(TaskState* ts);
  void on(const ClientReleasesKeys& e);
  void on(const CancelKeys& e);
  void on(const RemoveClient& e);
  void on(const AddWorker& e);
  void on(const RemoveWorker& e);
  void on(const WorkerDied& e);
  void on(const Heartbeat& e);
  void on(const ThreadsBusy& e);
  void on(const CheckHeartbeats& e);
  void on(const TaskFinished& e);
  void on(const TaskErred& e);
  void on(const MissingData& e);
  /// MissingData from the worker running `dts`: true if that made `dts` err (see
  /// SchedulerOptions::allowed_fetch_failures).
  bool fetch_failed_for_good(TaskState* dts, const MissingData& e);
  void on(const StealResponse& e);
  void on(const WorkerStatusChanged& e);
  // retirement (retirement.cpp)
  void on(const RetireWorker& e);
  void on(const AddKeys& e);
  void on(const RetireWorkers& e);
  /// Marks `ws` retiring: nothing new goes there; the rest is drain()'s.
  void begin_retirement(WorkerState* ws, const std::string& reason);
  /// RetireWorkers' choice of `count` workers not retiring and not in `chosen`: idle ones
  /// first, then those holding the fewest bytes (Dask's workers_to_close).
  std::vector<WorkerState*> workers_to_close(std::size_t count,
                                             const std::vector<WorkerState*>& chosen) const;
  /// A retirement only clients asked for, whose only copies no worker can take: given up,
  /// the worker runs on as before and the requests waiting on it hear why.
  void give_up_retirement(WorkerState* ws, std::size_t unplaced);
  /// `ws` left (retired when `why` is empty): the requests waiting on it note it.
  void settle_retire_requests(const WorkerState* ws, const std::string& why);
  /// ReportRetirement for each request no longer waiting on any worker.
  void answer_retire_requests();
  // rebalance.cpp
  void on(const Rebalance& e);
  /// The workers a Rebalance evens out: those it names (addresses or names; unknown ones in
  /// `unknown`), else all; never a retiring, paused or removed one.
  std::vector<WorkerState*> rebalance_workers(const Rebalance& e,
                                              std::vector<std::string>& unknown) const;
  /// Plans moves from the workers above the mean bytes to those below, largest keys first,
  /// each only while it brings both nearer the mean; returns how many it asked for.
  std::size_t plan_rebalance(const std::vector<WorkerState*>& workers,
                             const std::vector<std::string>& keys, std::size_t request);
  /// `to` confirmed its copy of `ts` (AddKeys): the move's sender frees its copy.
  void rebalance_confirmed(TaskState* ts, WorkerState* to);
  /// Moves whose key left memory or whose worker left fail; past `now` (when >= 0) those
  /// asked for kReplicationPatience ago do too. Answers every request with none pending.
  void settle_rebalance(double now = -1);
  std::string validate_rebalance() const;
  /// Something that may move a retirement on happened to `ts` or `ws`: look again at the end
  /// of this handle().
  void retirement_touched(const TaskState* ts);
  void retirement_touched(WorkerState* ws);
  void retirement_touched_all();
  /// Asks back the tasks of `ws` not started, copies its only copies, closes it when done.
  void drain_retiring();
  void drain(WorkerState* ws);
  /// The worker that gets a copy of `ts` (least bytes held, `planned` included), or null.
  WorkerState* replica_target(const TaskState* ts,
                              const std::unordered_map<WorkerState*, std::int64_t>& planned) const;
  void close_retired(WorkerState* ws);
  /// Its replication is void (the target left or retires): the holders look again.
  void forget_replication_target(WorkerState* target);
  /// CheckHeartbeats: copies asked for long ago and never confirmed are asked for again.
  void retry_replications(double now);
  std::string validate_retiring() const;
  void detach_worker(WorkerState* ws, const std::string& reason, bool expected);
  /// `report`: the nanny's, if any (then only its running tasks are blamed); `how` ends the
  /// error of a task that killed too many workers ("by SIGSEGV", "(connection lost)").
  void reschedule_work_of(WorkerState* ws, bool expected, const WorkerDied* report = nullptr,
                          const std::string& how = "");
  void release_processing_of(WorkerState* ws, bool expected, const WorkerDied* report,
                             const std::string& how);
  void drop_replicas_of(WorkerState* ws);
  void expire_death_reports(double now);
  void check_no_workers(double now);
  bool is_dying(const WorkerState* ws) const;
  // validate()'s parts (queries.cpp): "" or what is wrong
  std::string validate_edges(TaskState* ts) const;  ///< its dependencies, waiters, waiting_on
  std::string validate_task(TaskState* ts) const;   ///< its state against its records
  std::string validate_workers() const;
  std::string validate_counts() const;  ///< task_counts() and function_metrics() by state
  void client_releases(ClientState* cs, const std::vector<TaskState*>& tasks);
  void add_want(TaskState* ts, ClientState* cs);
  void drop_want(TaskState* ts, ClientState* cs);

  // transitions (transitions.cpp)
  void recommend(TaskState* ts, TaskStatus finish);
  void run_transitions();
  void transition(TaskState* ts, TaskStatus finish);
  bool transition_step(TaskState* ts, TaskStatus finish);
  bool leave_backlog(TaskState* ts, TaskStatus finish);  ///< from queued or no_worker
  void released_to_waiting(TaskState* ts);
  void waiting_to_released(TaskState* ts);
  void dispatch_ready(TaskState* ts);
  void processing_to_released(TaskState* ts);
  // assign ahead (transitions.cpp)
  /// The worker `ts` may be sent to ahead of its dependencies, or null.
  void adopt_held_data(WorkerState* ws, const std::vector<std::string>& held);
  WorkerState* assign_ahead_target(const TaskState* ts) const;
  WorkerState* ahead_across_target(const TaskState* ts, bool strict) const;
  bool ahead_target_fits(const TaskState* ts, const WorkerState* ws, bool strict) const;
  bool has_ahead_room(const WorkerState* ws, const TaskState* ts) const;
  void recommend_assign_ahead(TaskState* ts);
  void assign_ahead(TaskState* ts);
  void assigned_to_processing(TaskState* ts);
  void refill_ahead(TaskState* ts);
  void unassign_dependents(TaskState* ts);
  void assigned_to_waiting(TaskState* ts);
  void processing_to_memory(TaskState* ts, WorkerState* ws, std::int64_t nbytes);
  void processing_to_erred(TaskState* ts, const std::string& worker,
                           std::shared_ptr<const TaskFailure> failure);
  void memory_to_released(TaskState* ts);
  void erred_to_released(TaskState* ts);
  void released_to_erred(TaskState* ts);
  void to_forgotten(TaskState* ts);
  void propagate_released(TaskState* ts);
  void propagate_erred(TaskState* ts);
  void add_to_memory(TaskState* ts, WorkerState* ws);
  void add_replica(TaskState* ts, WorkerState* ws);
  void remove_replica(TaskState* ts, WorkerState* ws);
  void log_transition(const TaskState* ts, TaskStatus start);
  void count_transition(const TaskState* ts, TaskStatus start);
  FunctionMetrics& metrics_of(const TaskState* ts);

  // placement (placement.cpp)
  bool queuing_enabled() const;
  bool is_root(const TaskState* ts) const { return ts->dependencies.empty(); }
  /// Free slots on `ws` for root task `next` (null: ignore its expected duration).
  int task_slots(const WorkerState* ws, const TaskState* next) const;
  int free_threads(const WorkerState* ws) const;  ///< not held by tasks nobody waits for
  double load_per_thread(const WorkerState* ws, double work) const;
  double occupancy(const WorkerState* ws) const;
  std::int64_t size_of(const TaskState* ts) const;
  WorkerState* decide_root_worker(const TaskState* ts) const;
  WorkerState* decide_worker(const TaskState* ts);
  void add_to_processing(TaskState* ts, WorkerState* ws);
  WorkerState* exit_processing(TaskState* ts);  ///< nullptr if its worker was removed
  void schedule_queued();
  void schedule_unrunnable();
  /// decide_worker among the workers that may take `ts` now (honouring its `workers` list
  /// or not), other than those in `avoid` (may be null).
  WorkerState* decide_worker_among(const TaskState* ts, bool honour_workers,
                                   const std::vector<std::string>* avoid);
  WorkerState* decide_worker_avoiding(const TaskState* ts, const std::vector<std::string>* avoid);
  /// The workers that could not fetch an input of `ts` from a live holder, or null.
  const std::vector<std::string>* failed_to_fetch_for(const TaskState* ts) const;

  // restrictions and resources (resources.cpp)
  /// Whether `ws` may take `ts` now: not paused, allowed by the task's `workers` (when
  /// honoured), with enough of each resource free.
  bool eligible(const TaskState* ts, const WorkerState* ws, bool honour_workers) const;
  /// Whether some connected worker could take `ts` now (as decide_worker would look).
  bool placeable(const TaskState* ts) const;
  /// Whether some connected worker could ever run `ts` (idle, not paused).
  bool runnable_somewhere(const TaskState* ts) const;
  std::string needs_of(const TaskState* ts) const;  ///< "resources GPU=1", ...
  void acquire_resources(TaskState* ts, WorkerState* ws);
  void release_resources(TaskState* ts, WorkerState* ws);
  /// A restricted task went to no-worker: the warning, once, if nobody can ever run it.
  void warn_unrunnable(TaskState* ts);
  void set_restrictions(TaskState* ts, const TaskSpec& spec);
  std::string validate_resources(const WorkerState* ws) const;
  void record_duration(FunctionName function, double seconds);

  // work stealing (stealing.cpp)
  /// Lists `ws` in idle_ / saturated_ as its load says (delists a removed worker).
  void classify_for_stealing(WorkerState* ws);
  /// Sends StealRequests from saturated to idle workers while one pays off.
  void balance();
  bool steal_for(WorkerState* thief);
  /// The task of `victim` best moved to `thief`, if moving one pays off.
  TaskState* steal_candidate(WorkerState* victim, WorkerState* thief) const;
  /// Seconds before `thief` could start `ts`: its own load, the fetch, the round trips.
  double start_on_thief(const TaskState* ts, const WorkerState* thief) const;
  void end_steal(TaskState* ts);
  void forget_thief(WorkerState* thief);  ///< it left: pending steals to it lose their target
  std::string validate_steals() const;

  // instructions
  void emit_to_worker(WorkerState* ws, Instruction instruction);
  void free_keys(WorkerState* ws, const std::string& key, bool processing = false);
  void log(LogLevel level, std::string message);
  void report_failure(TaskState* ts, ClientState* cs);
  void report_state(TaskState* ts, ClientState* cs);

  TaskState* find_task(std::string_view key) const;
  FunctionName intern_function(const std::string& name);
  WorkerState* find_worker(std::string_view address) const;
  ClientState* find_client(std::string_view id) const;
  ClientState* ensure_client(const std::string& id);

  SchedulerOptions options_;
  // Keyed by a view of the record's own key (a second copy of each key cost 80 B a task).
  std::unordered_map<std::string_view, std::unique_ptr<TaskState>> tasks_;
  // Every function name seen, never dropped (as many as the registered functions); a node
  // set, so that FunctionName's pointers stay valid.
  std::unordered_set<std::string> function_names_;
  std::map<std::string, std::unique_ptr<WorkerState>, std::less<>> workers_;
  std::unordered_map<std::string, std::unique_ptr<ClientState>, StringHash, std::equal_to<>>
      clients_;
  std::set<TaskState*, ByPriority> queued_;
  std::set<TaskState*, ByPriority> unrunnable_;  ///< no-worker
  /// Resources were released or a worker resumed in this handle(): no-worker tasks may fit.
  bool retry_unrunnable_ = false;
  /// The needs (needs_of) that no connected worker meets and that were logged: one warning
  /// each, not one per task (a map of a million GPU tasks on a cluster without a GPU); forgotten
  /// when a worker joins, as what is missing may change then.
  std::set<std::string, std::less<>> warned_needs_;
  // Work stealing: workers with a thread and nothing for it, and workers with tasks waiting
  // for a thread; kept up to date as tasks come and go, so balancing never walks all workers
  // or tasks.
  std::set<WorkerState*, ByAddress> idle_;
  std::set<WorkerState*, ByAddress> saturated_;
  /// Workers retiring (WorkerState::retiring), and the only copies they hold that are being
  /// copied: the task -> the worker asked to fetch it (AcquireReplicas), and when (the
  /// latest CheckHeartbeats' now; -1: before any): a copy not confirmed in
  /// kReplicationPatience is asked for again.
  struct Replication {
    WorkerState* target = nullptr;
    double asked_at = -1;
  };
  /// A copy asked for (AcquireReplicas) and not confirmed this long after is given up, and
  /// a retirement's asked for again (of the worker holding the fewest bytes then, maybe the
  /// same): the target may have held a stale run of the key, or lost the request with a
  /// blip. A working copy takes milliseconds.
  static constexpr double kReplicationPatience = 10;
  std::set<WorkerState*, ByAddress> retiring_;
  /// Clients' RetireWorkers not answered yet: the workers each still waits for (addresses),
  /// and what came of the others.
  struct RetireRequest {
    std::string client;
    std::uint64_t request_id = 0;
    std::set<std::string, std::less<>> waiting;
    std::vector<std::string> retired;
    std::vector<ReportRetirement::Failure> failed;
  };
  std::vector<RetireRequest> retire_requests_;
  std::unordered_map<TaskState*, Replication> replicating_;
  /// Clients' Rebalance requests not answered yet, by a serial of their own, and their moves
  /// not confirmed, by key (a key moves once at a time); by name, as a key or worker may go.
  struct RebalanceRequest {
    std::string client;
    std::uint64_t request_id = 0;
    std::size_t pending = 0;
    ReportRebalance answer;
  };
  struct RebalanceMove {
    std::string from, to;
    std::size_t request = 0;
    double asked_at = -1;
  };
  std::map<std::size_t, RebalanceRequest> rebalance_requests_;
  std::map<std::string, RebalanceMove, std::less<>> rebalance_moves_;
  std::size_t rebalance_serial_ = 0;
  // Keyed by FunctionName::id(): placement asks several times a task.
  std::unordered_map<const std::string*, double> durations_;
  // A ring of the last transition_log_length transitions; once full, a record's strings are
  // overwritten in place (their capacity reused), so logging allocates nothing (it was 7 % of
  // the scheduler's thread as a deque of fresh strings).
  TaskCounts counts_;
  // Keyed by the interned name's address (see FunctionName): a pointer hash per transition.
  std::unordered_map<const std::string*, FunctionMetrics> function_metrics_;
  std::vector<TransitionRecord> transition_log_;
  std::size_t transition_log_next_ = 0;  ///< the oldest record once the ring is full
  std::uint64_t generation_ = 0;
  std::uint64_t stimulus_counter_ = 0;
  std::uint64_t placement_epoch_ = 0;

  // state of the handle() call in progress
  Instructions out_;
  std::string stimulus_id_;
  bool release_may_leave_running_ = false;  ///< a processing task released may go on running
  std::vector<TaskState*> recommendations_;  ///< stack; the target is TaskState::recommended
  /// Sent back to wait (assigned_to_waiting): considered for assigning ahead again once the
  /// recommendations under way are applied (run_transitions).
  std::vector<TaskState*> ahead_again_;
  std::unordered_map<const WorkerState*, std::size_t> last_to_worker_;  ///< index in out_
  std::vector<std::unique_ptr<TaskState>> forgotten_;
  std::vector<std::unique_ptr<WorkerState>> removed_workers_;
  /// Workers with a nanny whose connection was lost, their tasks still processing on them
  /// until the nanny's report comes or `deadline` passes.
  struct DyingWorker {
    std::unique_ptr<WorkerState> ws;
    double deadline = 0;
    std::string reason;
  };
  std::vector<DyingWorker> dying_;
  /// Tasks whose worker could not fetch an input from a live holder: how many times, by
  /// (input, holder) (allowed_fetch_failures), and which workers failed (placement tries the
  /// others first). Dropped when the task finishes or errs, and pruned on CheckHeartbeats
  /// once it is no longer waiting or processing.
  struct FetchFailures {
    std::map<std::pair<std::string, std::string>, int> counts;
    std::vector<std::string> consumers;
  };
  std::unordered_map<std::string, FetchFailures> fetch_failures_;
  std::uint64_t attempts_ = 0;  ///< assignments made (TaskState::attempt)
  double last_heartbeat_check_ = -1;  ///< the previous CheckHeartbeats' now; -1: none yet
  double looking_since_ = 0;  ///< since when the checks have run unbroken (CheckHeartbeats)
  double no_workers_since_ = -1;  ///< when the last worker left with tasks waiting; -1: not
};

}  // namespace taskwire::scheduler
