#pragma once
// Stimuli the worker state machine reacts to (after Dask distributed's worker_state_machine
// StateMachineEvent classes). The server builds them from scheduler messages, peer replies
// and executor completions, and passes them to WorkerState::handle(). Every event carries a
// stimulus id that tags the instructions it causes; an empty id is replaced by
// "<kind>-<counter>".
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/protocol.hpp>
#include <taskwire/runtime/value.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace taskwire::worker {

using protocol::Key;
using runtime::Frame;

/// The scheduler asks this worker to compute a task. `frames` are the operation's payload
/// frames, which ArgSpec::frame_index refers to; `who_has` says where each dependency not
/// held here can be fetched.
struct ComputeTaskEvent {
  static constexpr std::string_view kind = "compute-task";
  protocol::TaskSpec spec;
  protocol::WhoHas who_has;
  std::vector<Frame> frames;
  std::string stimulus_id;
  std::uint64_t attempt = 0;  ///< echoed in what reports the task (protocol::ComputeTask)
  /// Dependencies whose bytes came along (protocol::ComputeTask::given): held as if fetched.
  std::vector<std::pair<Key, Frame>> given = {};
  /// Dependencies still running on the worker listed for them in who_has
  /// (protocol::ComputeTask::awaited): asked of it with a waiting GatherDep.
  std::vector<Key> awaited = {};
};

/// The scheduler no longer needs these keys here: drop their data, or their execution if it
/// has not started (a running one finishes and its result is dropped).
struct FreeKeysEvent {
  static constexpr std::string_view kind = "free-keys";
  std::vector<Key> keys;
  std::string stimulus_id;
};

/// A client placed data here itself (scatter, protocol::UpdateData): each key not known here,
/// or only waiting to be fetched, is held from now on as this worker's (the client tells the
/// scheduler next). Data for a key this worker holds or computes already is dropped.
struct UpdateDataEvent {
  static constexpr std::string_view kind = "update-data";
  std::vector<std::pair<Key, Frame>> data;
  std::string stimulus_id;
};

/// The scheduler would move `key` to another worker (work stealing): give it up if it is
/// still waiting here, and say whether it was (SendStealResponse).
struct StealRequestEvent {
  static constexpr std::string_view kind = "steal-request";
  Key key;
  std::string stimulus_id;
  std::uint64_t attempt = 0;  ///< echoed in the answer
};

/// The scheduler asks for copies of these keys (a retiring worker holds their only copies):
/// fetch each from its holders and keep it until freed, reporting it held (SendAddKeys).
/// A key held here already is reported at once; one computed here is left to its task.
struct AcquireReplicasEvent {
  static constexpr std::string_view kind = "acquire-replicas";
  protocol::WhoHas who_has;
  std::string stimulus_id;
};

/// A peer answered a GatherDep. `data` holds the keys it had; any requested key not in
/// `data` (listed in `missing` or not) was not there.
struct GatherDepDone {
  static constexpr std::string_view kind = "gather-dep-done";
  std::string worker;
  std::vector<std::pair<Key, Frame>> data;
  std::vector<Key> missing;
  std::string stimulus_id;
  /// When the request left and the reply came (seconds on the steady clock), for TaskRun.
  double sent_at = 0, arrived_at = 0;
  bool wait = false;  ///< the answer to a waiting GatherDep (GatherDep::wait)
};

/// A GatherDep could not be completed: the peer was unreachable, its comm failed or it sent
/// something malformed. The peer is assumed gone: it is dropped as a holder of every key.
struct GatherDepFailed {
  static constexpr std::string_view kind = "gather-dep-failed";
  std::string worker;
  std::string reason;
  std::string stimulus_id;
};

/// Where and after what a task ran, for the task streams of the dashboards: the pool
/// thread (-1: inline on the event loop) and the span of the transfers that brought its
/// dependencies (seconds on the steady clock; 0, 0: none was fetched).
struct TaskRun {
  int thread = -1;
  double transfer_start = 0, transfer_stop = 0;
  std::uint64_t transfer_bytes = 0;
};

/// Now on the steady clock, in seconds (TaskRun's times).
inline double steady_seconds() noexcept {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct ExecuteSuccess {
  static constexpr std::string_view kind = "execute-success";
  Key key;
  runtime::Value result;  ///< as the task returned it (live)
  double duration_s = 0;
  std::string stimulus_id;
  TaskRun run{};
};

/// The task threw (message = the exception's what()), or could not be invoked.
struct ExecuteFailure {
  static constexpr std::string_view kind = "execute-failure";
  Key key;
  std::string message;
  double duration_s = 0;
  std::string exception_type;  ///< demangled type of what it threw; empty if it was not run
  std::string stimulus_id;
  TaskRun run{};
};

using Event = std::variant<ComputeTaskEvent, FreeKeysEvent, StealRequestEvent, GatherDepDone,
                           GatherDepFailed, ExecuteSuccess, ExecuteFailure, UpdateDataEvent,
                           AcquireReplicasEvent>;

}  // namespace taskwire::worker
