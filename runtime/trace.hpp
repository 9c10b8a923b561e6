#pragma once
// A timeline of one process's messages, sleeps and task runs, for seeing the hops of a
// dependent edge (which message, whose wake-up) across the ranks of one host.
//
// Off unless TASKWIRE_TRACE names a directory: then each process records into memory (a
// fixed ring of kCapacity events, about 64 B each; the oldest are overwritten) and writes
// DIR/trace-<rank>-<pid>.txt when it exits, one event a line: steady-clock nanoseconds
// (CLOCK_MONOTONIC, shared by every process of a host), thread, event, operation number and
// a short text (a task's key). bench/trace_hops.py reads a directory of them.
// Recording costs a clock read and a copy; off, one predictable branch.
#include <taskwire/runtime/protocol.hpp>

#include <cstdint>
#include <string_view>

namespace taskwire::runtime::trace {

enum class What : std::uint8_t {
  queued,     ///< an operation added to an outgoing batch
  sent,       ///< a batch handed to the transport (op: its first operation)
  received,   ///< an operation read from a message, before its handler runs
  sleep,      ///< the MPI poller goes to sleep
  woken,      ///< ... and wakes
  task_start, ///< a task starts running (text: its key)
  task_end,   ///< ... and ends
};

/// Whether TASKWIRE_TRACE is set: read once, when the library loads; a plain load here, as
/// the hooks sit on the poller's and every message's path.
extern const bool kEnabled;
inline bool enabled() noexcept { return kEnabled; }
void record_slow(What what, std::uint8_t op, std::string_view text) noexcept;

inline void record(What what, protocol::Op op = protocol::Op{}, std::string_view text = {}) noexcept {
  if (kEnabled) record_slow(what, static_cast<std::uint8_t>(op), text);
}

}  // namespace taskwire::runtime::trace
