#pragma once
// The nanny (after Dask's distributed.nanny): taskwire-worker's parent process. It runs the
// worker in a child process (the same program with --no-nanny), restarts it when it dies of a
// signal (a task that segfaults or aborts, the OOM killer, kill -9), tells the scheduler how
// it died and which tasks it was running, and forwards SIGINT/SIGTERM, killing a child that
// does not stop in time. A child that exits on its own (a clean shutdown, a lost scheduler, a
// bad option) ends the nanny with its exit status. Once its worker has joined, the nanny
// keeps a link of its own to the scheduler: a scheduler shutting down says so there, and the
// nanny then ends (exit 0) without restarting a worker that is dead or still starting; a
// scheduler that merely vanished says nothing, and restarts go on (each restarted worker's
// wait for it bounded by --death-timeout).
#include <taskwire/comm/core/registry.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace taskwire::worker {

struct NannyOptions {
  std::vector<std::string> child_args;  ///< the worker's arguments, without argv[0]
  /// Its arguments when it is started again after leaving with kExitRejoin (lost its
  /// scheduler): its wait for the scheduler is then bounded by --death-timeout.
  std::vector<std::string> rejoin_args;
  std::string scheduler;                ///< where to report deaths, or:
  std::string scheduler_file;           ///< read at each report
  /// The nanny gives up (exits 1) when its worker died this many times within a minute.
  int restart_limit = 10;
  /// After SIGINT/SIGTERM, or when the nanny is told to stop, the child gets this long to
  /// end before it is killed.
  std::chrono::milliseconds stop_grace{5000};
};

/// Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD in the calling thread, so that every thread
/// started later inherits the mask and the nanny alone takes them (sigtimedwait). Call
/// before any thread starts.
void block_nanny_signals();

/// Runs until the worker ends for good; returns the process exit status.
int run_nanny(comm::Registry& registry, const NannyOptions& options);

/// In the child: if a nanny started this process, dies with it (PR_SET_PDEATHSIG) and
/// returns true.
bool adopt_nanny();

}  // namespace taskwire::worker
