#pragma once
// What the scheduler state machine asks its server to do. Each instruction names its peer
// (a worker address or a client id) and the stimulus that caused it. The server turns them
// into messages batched per peer; within one handle() result, instructions to the same peer
// must be delivered in order (a FreeKeys may precede a ComputeTask for the same key).
#include <taskwire/scheduler/task_spec.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace taskwire::scheduler {

/// Where a dependency's data can be fetched from.
struct DependencyLocation {
  std::string key;
  /// Worker addresses; empty for an input still running on the task's own worker.
  std::vector<std::string> who_has;
  std::int64_t nbytes = 0;
  /// Still running, on the one worker in who_has (assigned ahead across workers): the
  /// worker asks it to send the result once done (protocol::ComputeTask::awaited).
  bool running = false;
};

// ---- to workers ----

struct ComputeTask {
  std::string worker;
  std::string key;
  std::string function;
  SpecRef spec = 0;
  std::vector<DependencyLocation> dependencies;
  Priority priority;
  std::string stimulus_id;
  /// What it consumes there (SubmitOptions::resources): the worker keeps its own account.
  runtime::Resources resources = {};
  std::uint64_t attempt = 0;  ///< this assignment's (protocol::ComputeTask::attempt)
};

/// Drop these keys: their data, or their execution if still pending or running.
struct FreeKeys {
  std::string worker;
  std::vector<std::string> keys;
  std::string stimulus_id;
  /// The keys were processing there (and may be running): the worker answers with how many
  /// of its threads such tasks hold (threads_busy).
  bool processing = false;
};

/// Work stealing: ask the worker processing `key` to give it up if it has not started it.
/// The worker answers with a StealResponse; until then the task stays where it is.
struct StealRequest {
  std::string worker;
  std::string key;
  std::string stimulus_id;
  std::uint64_t attempt = 0;  ///< of the assignment asked for, echoed in the answer
};

/// Turn a registering worker away (it was not added): tell it `reason` and close its comm.
struct RefuseWorker {
  std::string worker;
  std::string reason;
  std::string stimulus_id;
};

/// Ask a worker to shut down: it missed its heartbeats and was removed (`rejoin`: a nanny
/// restarts it to join again), or it retired (no rejoin: it and its nanny end).
struct CloseWorker {
  std::string worker;
  std::string reason;
  std::string stimulus_id;
  bool rejoin = true;
};

/// Fetch `keys` from their holders and keep them until freed; answered by AddKeys (Dask's
/// acquire-replicas). How a retiring worker's only copies reach another worker.
struct AcquireReplicas {
  std::string worker;
  std::vector<DependencyLocation> keys;
  std::string stimulus_id;
};

// ---- to clients ----

struct ReportKeyInMemory {
  std::string client;
  std::string key;
  std::int64_t nbytes = 0;
  std::string stimulus_id;
};

/// `message` is the original text when blamed_key == key; otherwise it reads
/// "dependency 'X' failed: <original text>".
struct ReportTaskErred {
  std::string client;
  std::string key;
  std::string blamed_key;
  std::string message;  ///< for the client: "dependency 'K' failed: cause" when K != key
  std::string cause;    ///< the message blamed_key raised
  std::string exception_type;  ///< what blamed_key threw (see TaskFailure), possibly empty
  std::string worker_name;     ///< the worker blamed_key failed on, possibly empty
  std::string worker_address;
  std::string stimulus_id;
};

/// A key that was in memory lost its last copy with a worker; it is being recomputed.
struct ReportKeyLost {
  std::string client;
  std::string key;
  std::string stimulus_id;
};

/// The keys will never get a result: cancelled, or their inputs are unknown or lost.
struct ReportCancelled {
  std::string client;
  std::vector<std::string> keys;
  std::string reason;
  std::string stimulus_id;
};

/// The answer to a client's RetireWorkers: `retired` are gone, their work and data elsewhere;
/// each of `failed` (as the client named it, or its address) could not be, and why.
struct ReportRetirement {
  struct Failure {
    std::string worker;
    std::string reason;
  };
  std::string client;
  std::uint64_t request_id = 0;
  std::vector<std::string> retired;  ///< addresses, in the order they left
  std::vector<Failure> failed;
  std::string stimulus_id;
};

/// The answer to a client's Rebalance: `moved` keys (`moved_bytes`) now live on another
/// worker; each of `failed` says which key could not be moved and why.
struct ReportRebalance {
  std::string client;
  std::uint64_t request_id = 0;
  std::size_t moved = 0;
  std::int64_t moved_bytes = 0;
  std::vector<std::string> failed;
  std::string stimulus_id;
};

// ---- to the server itself ----

/// The scheduler forgot this task; the server may drop the payload frames behind `spec`.
struct DropTaskSpec {
  std::string key;
  SpecRef spec = 0;
  std::string stimulus_id;
};

enum class LogLevel { debug, info, warning, error };

/// Something worth a line in the scheduler's log (worker joins and losses, lost keys...).
struct LogEvent {
  LogLevel level = LogLevel::info;
  std::string message;
  std::string stimulus_id;
};

using Instruction =
    std::variant<ComputeTask, FreeKeys, StealRequest, RefuseWorker, CloseWorker,
                 AcquireReplicas, ReportKeyInMemory, ReportTaskErred, ReportKeyLost,
                 ReportCancelled, ReportRetirement, ReportRebalance, DropTaskSpec, LogEvent>;
using Instructions = std::vector<Instruction>;

const std::string& stimulus_of(const Instruction& instruction) noexcept;

}  // namespace taskwire::scheduler

template <>
struct fmt::formatter<taskwire::scheduler::LogLevel> : fmt::formatter<std::string_view> {
  auto format(taskwire::scheduler::LogLevel l, fmt::format_context& ctx) const
      -> fmt::format_context::iterator;
};

/// One line per instruction, e.g. "compute-task 'x' -> tcp://a:1 [update-graph-1]".
template <>
struct fmt::formatter<taskwire::scheduler::Instruction> : fmt::formatter<std::string_view> {
  auto format(const taskwire::scheduler::Instruction& i, fmt::format_context& ctx) const
      -> fmt::format_context::iterator;
};
