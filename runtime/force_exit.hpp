#pragma once
// A teardown watchdog for run-once batch programs: once the results are safe, a hung shutdown
// (a peer that never acknowledges, a thread that never joins) must not keep a batch job's
// allocation busy until the wall-clock limit.
//
//   taskwire::force_exit_after(30, "after writing results.csv");   // arm
//   ...                                                             // tear down
//   taskwire::force_exit_after(0, "");                              // cancel, if you get here
//
// If the deadline passes, a daemon thread writes a line naming `note` to stderr (and the log),
// then ends the process with std::_Exit(status) (kForceExitCode unless given): no destructors,
// no atexit handlers.
// Thread-safety: may be called from any thread.
#include <string>

namespace taskwire::runtime {

/// The exit status of a process ended by the watchdog (as coreutils' `timeout`).
inline constexpr int kForceExitCode = 124;

/// Arms the watchdog to fire `seconds` from now, replacing any earlier deadline, note and
/// status (re-arming); `seconds` <= 0 cancels it. The watchdog thread is started on first use
/// and never stops; it does not keep the process alive.
void force_exit_after(double seconds, std::string note, int status = kForceExitCode);

}  // namespace taskwire::runtime

namespace taskwire {
using runtime::force_exit_after;
using runtime::kForceExitCode;
}  // namespace taskwire
