#pragma once
// How the ranks of an MPI job learn why one of them left, so that the job's end names it.
//
// - Farewell: the reason a rank gives in its GOODBYE (MpiEnvironment::shutdown(Farewell)):
//   an orderly shutdown, exit(status) with MPI still up, or a signal (SIGINT/SIGTERM).
// - A rank on this host that died without GOODBYE leaves a zombie whose wait status the
//   others read in /proc (exit_status_of()) while it lasts: its launcher reaps it.
// - LauncherLinks: Hydra's proxy ends the whole job with SIGKILL when a rank's PMI socket
//   closes, or when its output pipes close and waitpid finds it killed by a signal. Copies
//   of the PMI socket and output pipes of the other ranks on this host, held while someone
//   watches for deaths (ClusterRank), keep them open after the death, so that those paths
//   stay quiet and the watcher can name the rank, then end the job itself with MPI_Abort.
// What no other rank can prevent: Hydra's proxy also takes SIGCHLD, reaps the rank at once
// and, for a rank killed by a signal, SIGKILLs every other rank's process group right after,
// whatever links are held. The same exit wakes the other ranks (pidfd), so whether one
// reads the zombie's status first, or writes its line before that SIGKILL lands, is a race
// (docs/faults.md, "MPI exits", has the timings). The rank's own watcher (rank_watcher.hpp)
// is what names it every time; the links matter where a rank has none.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskwire::comm::mpi {

struct Farewell {
  enum class Kind : std::int32_t { orderly = 0, exit = 1, signal = 2 };
  Kind kind = Kind::orderly;
  std::int32_t code = 0;  ///< the exit status, or the signal number

  static Farewell exited(int status) noexcept { return {Kind::exit, status}; }
  static Farewell signalled(int signo) noexcept { return {Kind::signal, signo}; }
  bool orderly() const noexcept { return kind == Kind::orderly; }
  /// "called exit(3) (or returned 3 from main)", "received SIGTERM (Terminated)", "shut down".
  std::string str() const;
};

/// "exited with status 3", "was killed by SIGKILL (Killed)", from a waitpid-style status.
std::string describe_wait_status(int status);

/// The wait status of process `pid` if it is a zombie (ended, not yet reaped) readable here.
std::optional<int> exit_status_of(long pid);

/// The launcher's socket of this process (PMI_FD, set by Hydra and Slurm's PMI-2), or -1.
int launcher_socket_fd() noexcept;

/// Copies of other processes' launcher sockets (see above). Not thread-safe: one owner.
class LauncherLinks {
 public:
  LauncherLinks() = default;
  ~LauncherLinks() { release(); }
  LauncherLinks(const LauncherLinks&) = delete;
  LauncherLinks& operator=(const LauncherLinks&) = delete;

  /// Takes a copy of socket or pipe `fd` of the process behind `pidfd` (pidfd_getfd: needs
  /// the same rights as ptrace; without them the launcher keeps its own reaction). Returns
  /// whether it did.
  bool hold(int pidfd, int fd);
  /// Closes every copy: the launcher sees again what becomes of those processes.
  void release() noexcept;
  std::size_t held() const noexcept { return fds_.size(); }

 private:
  std::vector<int> fds_;
};

/// /dev/shm/taskwire-wake-PID names whose process is gone or a zombie (a start-up cut short
/// by SIGKILL) and that belong to this user: removed. A process in another pid namespace sharing this
/// /dev/shm looks gone too; the worst for it is a rank not woken through its page (timed
/// sleeps instead). Returns how many were removed.
int remove_stale_wake_names();

/// While it exists, SIGINT, SIGTERM and SIGHUP at their default action (which would end the
/// process with its wake-board name still in /dev/shm) first remove `shm_names` (this rank's
/// and those of the job's other ranks on this host: a rank that dies in start-up makes Hydra
/// SIGKILL the others, maybe before their own handler ran), say which rank was interrupted
/// during MPI start-up, then take their default action. Dispositions the program set itself
/// are left alone. At most one at a time.
class StartupSignalGuard {
 public:
  StartupSignalGuard(const std::vector<std::string>& shm_names, int rank);
  ~StartupSignalGuard();
  StartupSignalGuard(const StartupSignalGuard&) = delete;
  StartupSignalGuard& operator=(const StartupSignalGuard&) = delete;
};

}  // namespace taskwire::comm::mpi
