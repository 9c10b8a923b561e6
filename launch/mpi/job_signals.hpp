#pragma once
// SIGINT/SIGTERM of a job launched under mpiexec, caught while taskwire runs the job.
//
// Hydra forwards a Ctrl-C (and a SIGTERM) to every rank. A rank that dies of it by the
// default action is a "BAD TERMINATION" to Hydra, which SIGKILLs the other ranks and reports
// the bitwise OR of their statuses (SIGINT 2 | SIGKILL 9 = 11, "Segmentation fault"). So a
// rank must not die of these signals while it is in the job, not even in the moment between
// the end of its role and the end of MPI: JobSignals catches them from construction to
// destruction. The first one arms runtime::force_exit_after(grace, 128 + signo), so that the
// rank ends within `grace` however its shutdown goes, and is handed to the handler (if one is
// set, else as soon as one is) on JobSignals' own thread: never in signal context, never on a
// thread the program or an event loop needs. Later signals are logged and otherwise ignored.
//
// Destruction restores the dispositions found at construction. At most one JobSignals exists
// at a time in a process (the handler is process-wide). Thread-safety: all members may be
// called from any thread.
#include <atomic>
#include <csignal>
#include <functional>
#include <mutex>
#include <thread>

namespace taskwire::mpi::detail {

class JobSignals {
 public:
  /// Installs the handlers. Throws std::system_error when they cannot be installed.
  explicit JobSignals(double grace_seconds);
  ~JobSignals();
  JobSignals(const JobSignals&) = delete;
  JobSignals& operator=(const JobSignals&) = delete;

  /// `handler(signo)` runs once, for the first signal, on JobSignals' thread (at once if
  /// that signal came before). An empty handler unsets it, waiting for a running one first.
  void set_handler(std::function<void(int signo)> handler);

  /// The first signal caught (SIGINT or SIGTERM), or 0.
  int received() const noexcept { return received_.load(); }

  /// Handles `signo` as if this process had caught it: another rank of the job got it alone
  /// (a `kill` of one rank), and the job ends as a whole, the same way as after a Ctrl-C.
  void forward(int signo);

 private:
  void respond();

  double grace_seconds_;
  std::atomic<int> received_{0};
  std::mutex handler_mu_;  // held while the handler runs
  std::function<void(int)> handler_;
  bool delivered_ = false;  // the handler has had the first signal
  int pipe_[2] = {-1, -1};  // the signal handler writes the signal number; respond() reads it
  struct sigaction previous_int_{}, previous_term_{};
  std::thread responder_;
};

}  // namespace taskwire::mpi::detail
