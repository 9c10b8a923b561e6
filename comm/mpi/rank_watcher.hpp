#pragma once
// A watcher that the launcher cannot outrun: the line that names a rank which died.
//
// Hydra's proxy (MPICH 4.0) takes SIGCHLD, reaps a dead rank within milliseconds and, for one
// killed by a signal, SIGKILLs every other rank's process group right after: the other ranks'
// death watch (MpiEnvironment::check_peers) loses that race about half the time, and then no
// line says which rank died or why (docs/faults.md, "MPI exits").
//
// So before MPI starts, a rank under Hydra forks. The process Hydra started (holding its PMI
// socket and output pipes: Hydra notices nothing) becomes the watcher: it only waits for its
// child, passes on the signals it is sent, and when the child dies without having left the
// job in order it writes the line naming rank, role, host, pid and cause to stderr, then ends
// itself the same way (the same signal, default action, no core file; or the same exit
// status). Hydra sees the death only then, with its line already in the pipe, and reports and
// reacts to it as it would have to the rank's own. The child runs the program: it dies with
// its watcher (PR_SET_PDEATHSIG), and stays in the watcher's process group, so that Hydra's
// SIGKILL of the group (a job's end) takes both at once, as it took the rank before; a
// catchable signal sent to the group reaches it twice, directly and through the watcher,
// which the rank's handlers (JobSignals, StartupSignalGuard) take as one.
//
// Not forked (start_rank_watcher() says why): outside Hydra (no PMI_FD and HYDI_CONTROL_FD),
// a job of one rank, a process that already runs threads or initialised MPI. What the
// watcher cannot pass on: SIGSTOP (SIGTSTP it does) and SIGKILL of the watcher itself, which
// kills the child (PR_SET_PDEATHSIG) and leaves the naming to the other ranks as before.
//
// Process-wide by nature (one fork per process): the stage and the watcher's pid are globals,
// set before any thread starts.
#include <optional>
#include <string>

namespace taskwire::comm::mpi {

/// Where the rank stands, as its watcher reads it when the rank's process ends.
enum class RankStage : int {
  starting = 0,    ///< in MPI's start-up (MpiEnvironment not up yet)
  in_job = 1,      ///< in the job: an end now is a death the job cannot survive
  left = 2,        ///< its GOODBYE went out: the other ranks know why it leaves
  ending_job = 3,  ///< it ends the job itself (MPI_Abort), having named why
};

enum class RankWatcherStart {
  forked,           ///< this process is the rank's; its watcher is its parent
  not_under_hydra,  ///< no PMI_FD and HYDI_CONTROL_FD
  single_rank,      ///< a job of one rank (or no size known)
  threads_running,  ///< a fork would leave the program's other threads behind
  mpi_initialized,  ///< the program initialised MPI itself
  failed,           ///< mmap or fork failed
};

/// "forked", "not under Hydra", ...: for a log line.
const char* to_string(RankWatcherStart start) noexcept;

/// Forks the watcher (see above) when it can, and returns in the child, which goes on as the
/// rank; the watcher never returns. `role` is what the rank will do ("worker"), for the
/// line. `argv` (may be null) is overwritten in the watcher only, so that `ps` shows what it
/// is; its name (comm) is "taskwire-watch" too. Call it before MPI starts and before any
/// thread does; at most once.
RankWatcherStart start_rank_watcher(int argc, char** argv, const std::string& role);

/// This process's watcher's pid; 0 when it has none.
long rank_watcher_pid() noexcept;

/// Tells the watcher where the rank stands (nothing without a watcher). Async-signal-safe.
void note_rank_stage(RankStage stage) noexcept;

/// What the watcher knows when the rank's process ended.
struct RankEnd {
  int rank = -1;
  std::string role;
  std::string host;
  long pid = 0;          ///< the rank's process
  long watcher_pid = 0;  ///< the pid Hydra knows
  int status = 0;        ///< waitpid's
  RankStage stage = RankStage::starting;
  int forwarded = 0;  ///< the last signal the watcher passed on, 0 none
};

/// The watcher's line for `end`, or nothing when the end needs none: an exit after the rank
/// left in order, any end while it ends the job itself (it said why), or a death in start-up
/// by the very signal the watcher passed on (StartupSignalGuard says that one). The other
/// ranks take a watcher's end as the rank named (MpiEnvironment::wait_for_watcher): every
/// other end of a rank in the job gets a line.
std::optional<std::string> rank_end_line(const RankEnd& end);

}  // namespace taskwire::comm::mpi
