#pragma once
// What the worker state machine asks its server to do (after Dask's Instruction classes).
// Each names the stimulus that caused it. The Send* instructions become operations in the
// next batch to the scheduler.
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/protocol.hpp>
#include <taskwire/worker/run_order.hpp>
#include <taskwire/worker/worker_events.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace taskwire::worker {

using protocol::Key;
using runtime::Frame;

/// Run `function` on `args` (already resolved: inline frames and dependency results as
/// held, in argument order) on the thread pool, then report ExecuteSuccess or ExecuteFailure.
struct Execute {
  Key key;
  std::string function;
  std::vector<runtime::Value> args;
  RunOrder priority;
  std::string stimulus_id;
  TaskRun run{};  ///< its dependencies' transfers; the executor adds the thread
};

/// Fetch `keys` from the peer worker at `worker` (one get_data request), then report
/// GatherDepDone or GatherDepFailed. At most one GatherDep per peer is outstanding.
struct GatherDep {
  std::string worker;
  std::vector<Key> keys;
  std::string stimulus_id;
  /// One key the peer is still computing: it answers once the result is there (or missing
  /// if the task leaves it), however long that takes (protocol::GetData::wait).
  bool wait = false;
};

struct SendTaskFinished {
  Key key;
  std::uint64_t nbytes = 0;
  double duration_s = 0;
  std::string stimulus_id;
  TaskRun run{};
  std::uint64_t attempt = 0;  ///< the compute_task's this answers (protocol::ComputeTask)
};

struct SendTaskErred {
  Key key;
  std::string message;
  std::string exception_type;  ///< see protocol::TaskErred
  std::string stimulus_id;
  std::uint64_t attempt = 0;  ///< as in SendTaskFinished
};

/// Task `key` cannot run here: no holder had its dependency `missing` (`from` is the last
/// holder asked, empty if none was listed). The task has been dropped from this worker.
struct SendMissingData {
  Key key;
  Key missing;
  std::string from;
  std::string stimulus_id;
  bool awaited = false;  ///< protocol::MissingData::awaited
};

/// The answer to a StealRequestEvent: `stolen` when the task was dropped, not having started.
struct SendStealResponse {
  Key key;
  bool stolen = false;
  std::string stimulus_id;
  std::uint64_t attempt = 0;  ///< the request's
};

/// This worker holds copies of `keys` as AcquireReplicasEvent asked (add_keys).
struct SendAddKeys {
  std::vector<Key> keys;
  std::string stimulus_id;
};

using Instruction = std::variant<Execute, GatherDep, SendTaskFinished, SendTaskErred,
                                 SendMissingData, SendStealResponse, SendAddKeys>;
using Instructions = std::vector<Instruction>;

const std::string& stimulus_of(const Instruction& instruction) noexcept;

}  // namespace taskwire::worker

/// One line per instruction, e.g. "execute 'x' (inc, 1 args) [compute-task-3]".
template <>
struct fmt::formatter<taskwire::worker::Instruction> : fmt::formatter<std::string_view> {
  auto format(const taskwire::worker::Instruction& i, fmt::format_context& ctx) const
      -> fmt::format_context::iterator;
};
