#pragma once
// Stimuli the scheduler state machine reacts to. The server builds one from each message it
// receives (or from its own clock, for CheckHeartbeats) and passes it to
// SchedulerState::handle(). Time only enters through the `now` fields, so the machine is
// deterministic. Every event carries a stimulus id that tags the instructions it causes;
// an empty id is replaced by "<kind>-<counter>".
#include <taskwire/scheduler/task_spec.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace taskwire::scheduler {

// ---- from clients ----

/// A key whose data a client placed on workers itself (scatter straight to workers).
struct ScatteredKey {
  std::string key;
  std::int64_t nbytes = 0;
  std::vector<std::string> workers;  ///< addresses; unknown ones (gone since) are skipped
};

/// New tasks, and the keys the client wants results for. Tasks already known keep their
/// first spec; tasks that no wanted key needs are dropped (culled). A wanted key whose
/// dependencies are unknown (or cyclic) is reported cancelled. Keys already in memory or
/// erred are reported at once. A new task listed in `scattered` goes to memory on its
/// workers at once, without running (its task runs only if none of them is connected);
/// a known one in memory gains them as replicas.
struct UpdateGraph {
  static constexpr std::string_view kind = "update-graph";
  std::string client;
  std::vector<TaskSpec> tasks;
  std::vector<std::string> wanted;
  std::string stimulus_id;
  std::vector<ScatteredKey> scattered = {};
};

/// The client no longer holds futures for these keys (reference count reached zero).
struct ClientReleasesKeys {
  static constexpr std::string_view kind = "client-releases-keys";
  std::string client;
  std::vector<std::string> keys;
  std::string stimulus_id;
};

/// Cancel keys and everything that depends on them. Without `force`, a key another client
/// also wants is only dropped from this client's interest.
struct CancelKeys {
  static constexpr std::string_view kind = "cancel-keys";
  std::string client;
  std::vector<std::string> keys;
  bool force = false;
  std::string stimulus_id;
};

/// A client asks for workers to be retired (Dask's Client.retire_workers): each of `workers`
/// (addresses or names), and `count` more chosen as Dask's workers_to_close does: idle ones
/// first, then those holding the fewest bytes (fewer if fewer are connected and not
/// retiring). Each is retired as after RetireWorker; answered by one ReportRetirement once
/// every one is gone or could not be retired: unknown, lost before it was done, or holding
/// only copies that no other worker can take (then it is not retired: it runs on as before).
struct RetireWorkers {
  static constexpr std::string_view kind = "retire-workers";
  std::string client;
  std::uint64_t request_id = 0;  ///< echoed in the answer
  std::vector<std::string> workers;
  std::size_t count = 0;
  std::string stimulus_id;
};

/// The client disconnected: everything it wanted is released.
struct RemoveClient {
  static constexpr std::string_view kind = "remove-client";
  std::string client;
  std::string stimulus_id;
};

// ---- from workers ----

/// A worker registers. A name another live worker has is refused (RefuseWorker): the name of
/// a removed worker (one whose connection closed, or timed out) is free again, so a worker
/// restarted under its old name joins once its predecessor's loss has been handled.
struct AddWorker {
  static constexpr std::string_view kind = "add-worker";
  std::string address;
  int nthreads = 1;
  std::string name;
  double now = 0;  ///< seconds, on the clock CheckHeartbeats uses; counts as a heartbeat
  std::string stimulus_id;
  bool nanny = false;  ///< a nanny reports this worker's death (WorkerDied)
  runtime::Resources resources = {};  ///< what it offers tasks (--resources)
  /// Results it holds already: a worker joining again after a blip (dropped for missing
  /// heartbeats, a partition) keeps its data, as Dask's reconnecting worker does. Those the
  /// scheduler keeps in memory become its replicas; it is told to free the rest.
  std::vector<std::string> held = {};
};

/// The worker is gone (connection lost, or it said goodbye when `expected`). Its tasks are
/// rescheduled; an unexpected loss counts against each task it was processing
/// (allowed_failures). For a worker with a nanny, the tasks wait (at most
/// SchedulerOptions::death_report_seconds) for the nanny's WorkerDied, which says how it
/// died and which tasks really ran.
struct RemoveWorker {
  static constexpr std::string_view kind = "remove-worker";
  std::string address;
  std::string reason;
  bool expected = false;
  std::string stimulus_id;
  double now = 0;
};

/// A nanny's report: its worker process died (`cause`, e.g. "SIGSEGV (Segmentation fault)")
/// while running `running`. Only those tasks are blamed; the worker's other tasks are
/// rescheduled without counting against them. Before or after the RemoveWorker of the same
/// worker, whichever comes first.
struct WorkerDied {
  static constexpr std::string_view kind = "worker-died";
  std::string address;
  std::string name;
  std::string cause;
  std::vector<std::string> running;
  double now = 0;
  std::string stimulus_id;
};

/// The worker's threads held by tasks the scheduler no longer counts there (a cancelled task
/// that keeps running): new work is placed as if the worker had that many fewer threads.
struct ThreadsBusy {
  static constexpr std::string_view kind = "threads-busy";
  std::string worker;
  int count = 0;
  std::string stimulus_id;
};

/// The worker paused (its memory is past the pause threshold) or resumed. Nothing new is
/// placed on, or stolen to, a paused worker; what waits there may be stolen from it.
struct WorkerStatusChanged {
  static constexpr std::string_view kind = "worker-status";
  std::string worker;
  bool paused = false;
  std::string stimulus_id;
};

struct Heartbeat {
  static constexpr std::string_view kind = "heartbeat";
  std::string worker;
  double now = 0;
  std::string stimulus_id;
};

/// Produced by the server's timer: removes (and asks to close) every worker whose last
/// heartbeat is more than `timeout` seconds before `now` (timeout <= 0 checks nothing), and
/// reschedules the tasks of dead workers whose nanny's report is overdue.
/// `interval` is the timer's period: a check more than two periods after the previous one
/// means the scheduler itself was not running (SIGSTOP, a swapped-out host), and the
/// heartbeats waiting unread in its sockets are not silence: workers are then judged from
/// that check on (0: no such judgement).
struct CheckHeartbeats {
  static constexpr std::string_view kind = "check-heartbeats";
  double now = 0;
  double timeout = 0;
  std::string stimulus_id;
  double interval = 0;
};

/// `attempt` is the one its ComputeTask carried: a report of another attempt (the task was
/// freed or moved since, or assigned again to the same worker) is stale. Attempts start at 1.
struct TaskFinished {
  static constexpr std::string_view kind = "task-finished";
  std::string worker;
  std::string key;
  std::int64_t nbytes = 0;  ///< size of the result held by the worker
  double duration = -1;     ///< seconds spent executing; < 0 if unknown
  std::string stimulus_id;
  std::uint64_t attempt = 0;
};

struct TaskErred {
  static constexpr std::string_view kind = "task-erred";
  std::string worker;
  std::string key;
  std::string message;
  std::string exception_type;  ///< demangled type of what the task threw; empty if it threw nothing
  std::string stimulus_id;
  std::uint64_t attempt = 0;  ///< as in TaskFinished
};

/// `worker` could not get `key` from `errant_worker`, which the scheduler listed as holding
/// it. The replica is dropped; a key left with none is recomputed. If `dependent` names the
/// task `worker` was fetching for, that task is rescheduled with fresh locations.
struct MissingData {
  static constexpr std::string_view kind = "missing-data";
  std::string worker;
  std::string key;
  std::string errant_worker;
  std::string dependent;
  std::string stimulus_id;
  /// errant_worker was asked to wait for the key and did not compute it (yet, or any more):
  /// the dependent waits again, and errant_worker's copy, if any, stays counted.
  bool awaited = false;
};

/// A victim's answer to a StealRequest: `stolen` when the task was still waiting there (not
/// running, not done) and the worker dropped it; the scheduler then sends it to the thief.
struct StealResponse {
  static constexpr std::string_view kind = "steal-response";
  std::string worker;
  std::string key;
  bool stolen = false;
  std::string stimulus_id;
  std::uint64_t attempt = 0;  ///< the request's (StealRequest::attempt)
};

/// Retire the worker without losing anything (Dask's retire_workers; a worker's --lifetime
/// asks for it itself): nothing new goes there, its tasks not started are asked back and
/// placed elsewhere, its running tasks finish, every key it holds the only copy of is copied
/// to another worker (AcquireReplicas, answered by AddKeys); then it is told to close
/// (CloseWorker without rejoin) and removed as after a goodbye, nothing recomputed. Without
/// another worker to take its copies it waits (or leaves by itself, as before).
struct RetireWorker {
  static constexpr std::string_view kind = "retire-worker";
  std::string worker;
  std::string reason;  ///< for the log, e.g. "its --lifetime of 3600 s is over"
  std::string stimulus_id;
};

/// `worker` holds `keys` now, as AcquireReplicas asked (Dask's add_keys): each key still in
/// memory gains it as a replica; it is told to free the others.
struct AddKeys {
  static constexpr std::string_view kind = "add-keys";
  std::string worker;
  std::vector<std::string> keys;
  std::string stimulus_id;
};

/// A client asks for the bytes held to be evened out between workers (Dask's
/// Client.rebalance): `keys` (all in memory when empty) between `workers` (addresses or
/// names; every worker not retiring when empty). Answered by one ReportRebalance once every
/// move is done or failed (rebalance.cpp).
struct Rebalance {
  static constexpr std::string_view kind = "rebalance";
  std::string client;
  std::uint64_t request_id = 0;  ///< echoed in the answer
  std::vector<std::string> keys;
  std::vector<std::string> workers;
  std::string stimulus_id;
};

using Event = std::variant<UpdateGraph, ClientReleasesKeys, CancelKeys, RemoveClient, AddWorker,
                           RemoveWorker, WorkerDied, ThreadsBusy, Heartbeat, CheckHeartbeats,
                           TaskFinished, TaskErred, MissingData, StealResponse,
                           WorkerStatusChanged, RetireWorker, AddKeys, RetireWorkers,
                           Rebalance>;

}  // namespace taskwire::scheduler
