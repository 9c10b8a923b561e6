#pragma once
// The runtime's wire protocol: the structs scheduler, workers and clients exchange. A message
// is a batch of operations in frames[0] (Boost.Serialization) followed by payload frames
// (serialized task arguments and results) that operations refer to by index. The scheduler
// never deserializes payload frames; it only forwards them.
#include <boost/serialization/map.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace taskwire::protocol {

using Key = std::string;
using WhoHas = std::map<Key, std::vector<std::string>>;  ///< key -> worker addresses

/// One argument of a task: a payload frame of the message, or the result of another task.
struct ArgSpec {
  enum Kind : std::uint8_t { frame = 0, dependency = 1 };
  Kind kind = frame;
  std::uint32_t frame_index = 0;  ///< kind == frame: index into the message's payload frames
  Key key;                        ///< kind == dependency
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & kind & frame_index & key; }
};

struct TaskSpec {
  Key key;
  std::string function;  ///< registered name (TASKWIRE_REGISTER)
  std::vector<ArgSpec> args;
  std::vector<Key> dependencies;
  std::int64_t priority = 0;  ///< lower runs first, after user_priority
  std::uint32_t retries = 0;
  /// SubmitOptions::priority: higher runs first, ahead of `priority` and of graphs submitted
  /// earlier (since protocol version 8).
  std::int32_t user_priority = 0;
  // Restrictions (since protocol version 9): SubmitOptions::resources, workers and
  // allow_other_workers. Workers receive only `resources` (the scheduler sends the other two
  // empty): they keep their own account of what runs.
  std::map<std::string, double> resources = {};  ///< consumed while it runs
  std::vector<std::string> workers = {};         ///< addresses or names it may run on
  bool allow_other_workers = false;              ///< `workers` is a preference, not a rule
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar & key & function & args & dependencies & priority & retries & user_priority;
    ar & resources & workers & allow_other_workers;
  }
};

// The numbers are the wire format: never renumber. Retired (nothing sent or handled them, so
// a peer that sends one is refused as it would be for any unknown number): 4 (who_has) and
// 23 (who_has_reply).
enum class Op : std::uint8_t {
  // client -> scheduler
  update_graph = 1, release_keys = 2, cancel_keys = 3, shutdown = 5,
  scheduler_info = 6,  // since protocol version 7; answered by scheduler_info_reply
  retire_workers = 7,  // since protocol version 18; answered by retire_workers_reply
  rebalance = 8,       // since protocol version 19; answered by rebalance_reply
  // scheduler -> client
  key_in_memory = 20, key_erred = 21, key_cancelled = 22, shutting_down = 24, key_lost = 25,
  scheduler_info_reply = 26,  // since protocol version 7
  retire_workers_reply = 27,  // since protocol version 18
  rebalance_reply = 28,       // since protocol version 19
  // worker -> scheduler
  register_worker = 40, heartbeat = 41, task_finished = 42, task_erred = 43,
  missing_data = 44,  // also client -> scheduler since protocol version 10 (key empty)
  worker_closing = 45,
  threads_busy = 46,  // since protocol version 4
  steal_response = 47,  // since protocol version 8
  worker_status = 48,   // since protocol version 9: paused or running (protocol::WorkerStatus)
  add_keys = 49,        // since protocol version 16: it holds the replicas asked for (AddKeys)
  retire_worker = 51,   // since protocol version 16: retire me (RetireWorker)
  // nanny -> scheduler (since protocol version 4)
  worker_died = 50,
  // scheduler -> worker
  compute_task = 60, free_keys = 61, close_worker = 62, worker_refused = 63,
  free_processing = 66,  // free_keys of tasks processing there; answered by threads_busy (v4)
  steal_request = 67,    // since protocol version 8; answered by steal_response
  acquire_replicas = 68, // since protocol version 16; answered by add_keys
  // anyone -> worker (peer data)
  get_data = 80, data_reply = 81,
  // client -> worker (since protocol version 15): data scattered straight to a worker
  update_data = 82, update_data_reply = 83,
};

/// A key a client placed on workers itself (scatter, since protocol version 15): the
/// scheduler records its holders and size; the bytes never pass through it.
struct ScatteredKey {
  Key key;
  std::uint64_t nbytes = 0;
  std::vector<std::string> workers;  ///< addresses as they registered
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & key & nbytes & workers; }
};
struct UpdateGraph {
  std::vector<TaskSpec> tasks;
  std::vector<Key> wanted;  ///< keys the client holds futures to
  /// Tasks of `tasks` whose data a client already placed on these workers: in memory there
  /// at once (their task runs only if every holder left before this arrived).
  std::vector<ScatteredKey> scattered = {};
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & tasks & wanted & scattered; }
};
struct Keys {  ///< release_keys, free_keys, key_lost, add_keys
  std::vector<Key> keys;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & keys; }
};
/// cancel_keys (a body of its own since protocol version 8). Without `force`, a key another
/// client also wants is only dropped from the sender's interest.
struct CancelKeys {
  std::vector<Key> keys;
  bool force = false;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & keys & force; }
};
struct KeysCancelled {  ///< key_cancelled (since protocol version 3)
  std::vector<Key> keys;
  std::string reason;  ///< "cancelled by client ...", "lost dependencies", ...
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & keys & reason; }
};
/// Payload: none, or one frame holding the result itself when the worker sent it inline
/// (small results, see TaskFinished): the client then needs no get_data round trip.
struct KeyInMemory {
  Key key;
  std::uint64_t nbytes = 0;
  /// Workers the client can get_data the key from; the addresses on the scheme the client
  /// reached the scheduler by first (a worker's other_addresses).
  std::vector<std::string> holders;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & key & nbytes & holders; }
};
struct KeyErred {
  Key key;
  std::string message;
  Key blamed_key;     ///< the task that raised: key itself, or a dependency that failed
  std::string cause;  ///< what blamed_key raised (message, without the dependency prefix)
  // Since protocol version 4: where blamed_key failed (empty when no worker reported it).
  std::string exception_type;  ///< demangled, e.g. "std::invalid_argument"; empty: not a throw
  std::string worker;          ///< the name of the worker that ran blamed_key
  std::string worker_address;  ///< its contact address
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar & key & message & blamed_key & cause & exception_type & worker & worker_address;
  }
};
struct RegisterWorker {
  std::string name;
  std::string address;  ///< where peers fetch data from this worker
  std::uint32_t nthreads = 1;
  /// A nanny watches this worker and reports its death (worker_died): the scheduler waits a
  /// moment for that report before it reschedules the worker's tasks (since version 4).
  bool nanny = false;
  /// More addresses serving the same data, for those who cannot reach `address` (e.g. a
  /// tcp:// door of a worker that talks mpi:// to its peers; since version 6).
  std::vector<std::string> other_addresses = {};
  std::string host = {};  ///< the worker's host name (since version 7)
  /// What it offers tasks, e.g. {"GPU": 2} (--resources; since version 9).
  std::map<std::string, double> resources = {};
  /// Results it holds already: a worker joining again after a blip kept them (since
  /// version 12). The scheduler keeps those it has in memory as replicas, frees the rest.
  std::vector<std::string> held = {};
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar & name & address & nthreads & nanny & other_addresses & host & resources & held;
  }
};
/// worker_status: the worker paused (its memory is past the pause threshold: it starts no
/// task) or resumed. The scheduler places nothing new on a paused worker.
struct WorkerStatus {
  bool paused = false;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & paused; }
};
/// heartbeat (a body since protocol version 7): what the worker reports of itself, sent right
/// after register_worker and then at each heartbeat interval.
struct Heartbeat {
  std::uint64_t memory_rss = 0;  ///< resident set size of the worker's process, bytes; 0: unknown
  std::uint32_t executing = 0;   ///< tasks running on its threads
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & memory_rss & executing; }
};
/// threads_busy: the worker's threads held by tasks the scheduler no longer counts there (a
/// cancelled task still running), sent whenever that number changes.
struct ThreadsBusy {
  std::uint32_t count = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & count; }
};
/// A nanny's report that its worker process died: how, and which tasks it was running (the
/// scheduler blames only those, not the tasks that were merely queued there).
struct WorkerDied {
  std::string address;               ///< the worker's address, as it registered
  std::string name;
  std::string cause;                 ///< e.g. "SIGSEGV (Segmentation fault)", "exit code 3"
  std::vector<Key> running;          ///< tasks that were executing when it died
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & address & name & cause & running; }
};
/// Payload: none, or one frame holding the result when it is small (at most the worker's
/// inline_result_bytes); the scheduler forwards it, unread, with key_in_memory to the
/// clients that want the key, and keeps nothing.
struct TaskFinished {
  Key key;
  std::uint64_t nbytes = 0;
  double duration_s = 0;
  /// For the task stream (since protocol version 8): the worker's pool thread that ran it
  /// (-1: its event loop), and the transfers that brought its dependencies from peers: how
  /// long they took from the first request to the last reply, how long before this message
  /// the last one ended, and their bytes (0 when nothing was fetched).
  std::int32_t thread = -1;
  double transfer_s = 0;
  double transfer_end_ago_s = 0;
  std::uint64_t transfer_bytes = 0;
  /// The compute_task's `attempt` this result answers (since protocol version 11).
  std::uint64_t attempt = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar & key & nbytes & duration_s & thread & transfer_s & transfer_end_ago_s & transfer_bytes &
        attempt;
  }
};
struct TaskErred {
  Key key;
  std::string message;
  /// Demangled type of what the task threw (since protocol version 4); empty when it threw
  /// nothing (its function is unknown, a local dependency failed).
  std::string exception_type;
  std::uint64_t attempt = 0;  ///< as in TaskFinished (since protocol version 11)
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & key & message & exception_type & attempt; }
};
/// The scheduler will not take this worker (since protocol version 4), e.g. its name is
/// already taken by a live worker; the worker closes and reports `reason`.
struct WorkerRefused {
  std::string reason;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & reason; }
};
/// close_worker (a body of its own since protocol version 10). `rejoin`: the scheduler
/// dropped this worker (no heartbeat in time) but would take it back; a worker under a nanny
/// is restarted and joins again. Without it (a shutdown), the worker ends for good.
struct CloseWorker {
  std::string reason;
  bool rejoin = false;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & reason & rejoin; }
};
/// retire_worker (since protocol version 16): the worker asks to leave without losing
/// anything (its --lifetime is over): the scheduler asks back what it has not started,
/// copies its only copies elsewhere, then closes it (close_worker without rejoin).
struct RetireWorker {
  std::string reason;  ///< for the scheduler's log
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & reason; }
};
/// acquire_replicas (since protocol version 16): fetch these keys from their holders and keep
/// them until freed; answered by add_keys with those now held.
struct AcquireReplicas {
  WhoHas who_has;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & who_has; }
};
struct MissingData {
  Key key;          ///< the task that could not run
  Key missing;      ///< the dependency no holder had
  std::string from; ///< the worker that was asked
  /// Since protocol version 20: `from` was asked to wait for it (GetData::wait) and did not
  /// compute it: not a holder that lost it (it may not have known the task yet).
  bool awaited = false;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & key & missing & from & awaited; }
};
/// steal_request: the scheduler would move `key` (its assignment `attempt`, since protocol
/// 13) to another worker; the worker gives it up if it has not started it.
struct StealRequest {
  Key key;
  std::uint64_t attempt = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & key & attempt; }
};
/// steal_response: `stolen` when the task was still waiting and the worker dropped it; false
/// when it is running, done, or not there. `attempt` echoes the request's: an answer to an
/// earlier request (of an assignment since retried there) is told apart from this one.
struct StealResponse {
  Key key;
  bool stolen = false;
  std::uint64_t attempt = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & key & stolen & attempt; }
};
/// `attempt` (since protocol version 11) names this assignment of the task, unique in the
/// scheduler's life: the worker echoes it in task_finished or task_erred, so that a report
/// of an earlier assignment (one freed or moved since) is never taken for this one's.
/// A dependency's bytes sent along with a compute_task: payload frame `frame` holds `key`.
struct GivenDependency {
  Key key;
  std::uint32_t frame = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & key & frame; }
};
struct ComputeTask {
  TaskSpec spec;
  WhoHas who_has;  ///< where each dependency can be fetched
  std::uint64_t attempt = 0;
  /// Small dependencies the scheduler had just received inline with their task_finished
  /// (since protocol version 17): held by the worker as if it had fetched them.
  std::vector<GivenDependency> given;
  /// Dependencies still running on the worker listed for them in who_has (since protocol
  /// version 20; SchedulerOptions::assign_ahead_across_workers): asked of it with a waiting
  /// get_data, which it answers once the result is there.
  std::vector<Key> awaited;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & spec & who_has & attempt & given & awaited; }
};
struct GetData {
  std::uint64_t request_id = 0;
  std::vector<Key> keys;
  /// Since protocol version 20: a key the worker is computing is answered once it is done
  /// (or missing if its task leaves that worker unfinished), not missing at once. One key.
  bool wait = false;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & request_id & keys & wait; }
};
struct DataReply {  ///< payload frame i holds keys[i]; `missing` were not held
  std::uint64_t request_id = 0;
  std::vector<Key> keys;
  std::vector<Key> missing;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & request_id & keys & missing; }
};
/// update_data: a client places data on this worker (scatter); payload frame i holds
/// keys[i]. Answered by update_data_reply once the worker holds them.
struct UpdateData {
  std::uint64_t request_id = 0;
  std::vector<Key> keys;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & request_id & keys; }
};
/// update_data_reply: echoes request_id; nbytes[i] is the size held for keys[i].
struct UpdateDataReply {
  std::uint64_t request_id = 0;
  std::vector<Key> keys;
  std::vector<std::uint64_t> nbytes;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & request_id & keys & nbytes; }
};
/// rebalance (since protocol version 19): a client asks for the bytes held to be evened out
/// between `workers` (addresses or names; all when empty), moving only `keys` (all in memory
/// when empty). Answered by rebalance_reply once every move is done or failed.
struct RebalanceRequest {
  std::uint64_t request_id = 0;
  std::vector<std::string> keys;
  std::vector<std::string> workers;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & request_id & keys & workers; }
};
/// rebalance_reply: echoes request_id; `moved` keys (`moved_bytes`) now on other workers;
/// each of `failed` names a key or worker and why it did not move.
struct RebalanceReply {
  std::uint64_t request_id = 0;
  std::uint64_t moved = 0;
  std::uint64_t moved_bytes = 0;
  std::vector<std::string> failed;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & request_id & moved & moved_bytes & failed; }
};
/// scheduler_info: a client asks for a snapshot of the cluster; the reply echoes request_id.
struct SchedulerInfoRequest {
  std::uint64_t request_id = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & request_id; }
};
/// retire_workers (since protocol version 18): a client asks the scheduler to retire
/// `workers` (addresses or names) and `count` more of its choice (idle ones first, then those
/// holding the fewest bytes), as a worker's own retire_worker does: each leaves once its
/// unstarted tasks and its only copies are elsewhere. Answered by retire_workers_reply once
/// every one is gone or could not be retired.
struct RetireWorkersRequest {
  std::uint64_t request_id = 0;
  std::vector<std::string> workers;
  std::uint64_t count = 0;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & request_id & workers & count; }
};
/// A worker retire_workers could not retire (unknown, lost before it was done, or no other
/// worker could take its only copies), and why.
struct RetireFailure {
  std::string worker;  ///< its address, or the name the client gave
  std::string reason;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & worker & reason; }
};
/// retire_workers_reply: echoes request_id; `retired` are gone (their addresses).
struct RetireWorkersReply {
  std::uint64_t request_id = 0;
  std::vector<std::string> retired;
  std::vector<RetireFailure> failed;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & request_id & retired & failed; }
};
/// One worker as the scheduler sees it (in SchedulerInfo).
struct WorkerReport {
  std::string address;  ///< as it registered
  std::vector<std::string> other_addresses;
  std::string name;
  std::string host;
  std::uint32_t nthreads = 1;
  std::uint64_t memory_rss = 0;  ///< as of its last heartbeat; 0: not reported
  std::uint32_t executing = 0;   ///< as of its last heartbeat
  std::uint64_t processing = 0;  ///< tasks placed there and not finished (running or queued)
  std::uint64_t keys_held = 0;
  std::uint64_t bytes_held = 0;
  double since_heartbeat_s = 0;  ///< seconds since the scheduler last heard from it
  // Since protocol version 9.
  std::map<std::string, double> resources = {};       ///< what it offers (--resources)
  std::map<std::string, double> used_resources = {};  ///< held by tasks placed there
  bool paused = false;                                ///< as it last said (worker_status)
  bool retiring = false;  ///< leaving once its data is elsewhere (since protocol version 16)
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar & address & other_addresses & name & host & nthreads & memory_rss & executing &
        processing & keys_held & bytes_held & since_heartbeat_s;
    ar & resources & used_resources & paused & retiring;
  }
};
/// A task in no-worker state that no connected worker can ever run (SchedulerInfo): what it
/// waits for.
struct UnrunnableTask {
  Key key;
  std::string needs;  ///< e.g. "resources GPU=1", "one of the workers tcp://..."
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & key & needs; }
};
/// scheduler_info_reply: the cluster as the scheduler sees it when it handles the request.
struct SchedulerInfo {
  std::uint64_t request_id = 0;
  std::string address;                 ///< where the asking client reached the scheduler
  std::vector<std::string> addresses;  ///< every address it listens on
  std::uint64_t clients = 0;           ///< connected clients, the asking one included
  std::map<std::string, std::uint64_t> tasks_by_state;  ///< "memory" -> count, ...
  std::vector<WorkerReport> workers;   ///< sorted by address
  /// Tasks no connected worker can run (a resource none has, workers= naming none), by
  /// priority, at most kMaxUnrunnableReported; the no-worker count has them all (since 9).
  std::vector<UnrunnableTask> unrunnable = {};
  static constexpr std::size_t kMaxUnrunnableReported = 100;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar & request_id & address & addresses & clients & tasks_by_state & workers & unrunnable;
  }
};
struct Empty {  ///< shutdown, shutting_down, close_worker, worker_closing
  template <class Ar>
  void serialize(Ar&, unsigned) {}
};

}  // namespace taskwire::protocol
