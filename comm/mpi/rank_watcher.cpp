#include <taskwire/comm/mpi/rank_watcher.hpp>
#include <taskwire/comm/mpi/mpi_exits.hpp>
#include <taskwire/runtime/launch_env.hpp>
#include <taskwire/runtime/process_info.hpp>

#include <fmt/format.h>
#include <mpi.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace taskwire::comm::mpi {
namespace {

// Shared with the watcher (an anonymous shared mapping made before the fork).
std::atomic<int>* g_stage = nullptr;
long g_watcher_pid = 0;

// What the watcher passes on to the rank: what a launcher, a batch system or a user sends a
// process to stop, interrupt, hang up, resume or poke it. SIGKILL and SIGSTOP cannot be
// caught; SIGCHLD is the watcher's own.
constexpr int kForwarded[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                              SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU, SIGWINCH};

int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  return 0;  // unknown: not known to be alone
}

// `ps` shows the command line: the watcher's says what it is, within the bytes the original
// arguments occupy (the kernel reads no further), the rest zeroed.
void name_watcher(int argc, char** argv, const std::string& title) {
  ::prctl(PR_SET_NAME, "taskwire-watch", 0, 0, 0);
  if (argc < 1 || !argv || !argv[0]) return;
  char* const begin = argv[0];
  char* end = begin + std::strlen(begin);  // the NUL of the last contiguous argument
  for (int i = 1; i < argc && argv[i] == end + 1; ++i) end = argv[i] + std::strlen(argv[i]);
  const auto room = static_cast<std::size_t>(end - begin);
  const auto n = std::min(title.size(), room);
  std::memcpy(begin, title.data(), n);
  std::memset(begin + n, 0, room - n + 1);
}

void write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// The watcher's end: its line, then the rank's own end, so that Hydra reports and reacts to
// exactly what it would have seen of the rank.
[[noreturn]] void end_as_rank(const RankEnd& end) {
  if (const auto line = rank_end_line(end)) write_all(STDERR_FILENO, *line + "\n");
  if (WIFSIGNALED(end.status)) {
    const int signo = WTERMSIG(end.status);
    const rlimit no_core{0, 0};  // the rank's core file, if any, is the one that matters
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(signo, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signo);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::kill(::getpid(), signo);
    ::_exit(128 + signo);  // a signal whose default does not end a process
  }
  ::_exit(WIFEXITED(end.status) ? WEXITSTATUS(end.status) : 1);
}

// The watcher's whole life: signals taken synchronously (blocked, sigwaitinfo), so nothing
// runs in signal context and none is lost between two waits.
[[noreturn]] void watch_rank(pid_t child, const sigset_t& waited, RankEnd end) {
  for (;;) {
    siginfo_t info;
    const int signo = ::sigwaitinfo(&waited, &info);
    if (signo > 0 && signo != SIGCHLD) {
      ::kill(child, signo);
      end.forwarded = signo;
      continue;
    }
    int status = 0;
    if (::waitpid(child, &status, WNOHANG) != child) continue;  // stopped, or not it
    end.status = status;
    end.stage = static_cast<RankStage>(g_stage->load());
    end_as_rank(end);
  }
}

RankWatcherStart can_fork() {
  if (launcher_socket_fd() < 0 || !std::getenv("HYDI_CONTROL_FD"))
    return RankWatcherStart::not_under_hydra;
  if (runtime::launch_position().size < 2) return RankWatcherStart::single_rank;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return RankWatcherStart::mpi_initialized;
  if (thread_count() != 1) return RankWatcherStart::threads_running;
  return RankWatcherStart::forked;
}

}  // namespace

const char* to_string(RankWatcherStart start) noexcept {
  switch (start) {
    case RankWatcherStart::forked: return "forked";
    case RankWatcherStart::not_under_hydra: return "not under Hydra";
    case RankWatcherStart::single_rank: return "a job of one rank";
    case RankWatcherStart::threads_running: return "the process runs threads already";
    case RankWatcherStart::mpi_initialized: return "MPI is initialised already";
    case RankWatcherStart::failed: return "mmap or fork failed";
  }
  return "?";
}

RankWatcherStart start_rank_watcher(int argc, char** argv, const std::string& role) {
  if (g_stage) return RankWatcherStart::forked;
  if (const auto refused = can_fork(); refused != RankWatcherStart::forked) return refused;
  void* page = ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return RankWatcherStart::failed;
  auto* stage = new (page) std::atomic<int>(static_cast<int>(RankStage::starting));
  RankEnd end;
  end.rank = runtime::launch_position().rank;
  end.role = role;
  end.host = runtime::host_name();
  end.watcher_pid = ::getpid();
  // Buffered output would be written twice, by both processes.
  std::fflush(nullptr);
  // Blocked from before the fork: a signal that comes meanwhile waits for the watcher.
  sigset_t waited, previous;
  sigemptyset(&waited);
  for (int signo : kForwarded) sigaddset(&waited, signo);
  sigaddset(&waited, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &waited, &previous);
  const pid_t child = ::fork();
  if (child < 0) {
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    ::munmap(page, sizeof(std::atomic<int>));
    return RankWatcherStart::failed;
  }
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != static_cast<pid_t>(end.watcher_pid)) ::_exit(1);  // it died already
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    g_stage = stage;
    g_watcher_pid = end.watcher_pid;
    return RankWatcherStart::forked;
  }
  // The watcher: it must reap its child itself, and a closed stderr must not kill it. The
  // program's dispositions (SIG_IGN included) are the child's to apply: here every passed-on
  // signal stays blocked at its default, and sigwaitinfo takes it.
  for (int signo : kForwarded) ::signal(signo, SIG_DFL);
  ::signal(SIGCHLD, SIG_DFL);
  ::signal(SIGPIPE, SIG_IGN);
  g_stage = stage;
  end.pid = child;
  name_watcher(argc, argv,
               fmt::format("taskwire-watch: rank {}, pid {} ({})", end.rank, child, end.role));
  watch_rank(child, waited, std::move(end));
}

long rank_watcher_pid() noexcept { return g_watcher_pid; }

void note_rank_stage(RankStage stage) noexcept {
  if (g_stage && g_watcher_pid) g_stage->store(static_cast<int>(stage));
}

std::optional<std::string> rank_end_line(const RankEnd& end) {
  const bool signalled = WIFSIGNALED(end.status);
  if (end.stage == RankStage::ending_job) return std::nullopt;
  if (end.stage == RankStage::left && !signalled) return std::nullopt;
  // StartupSignalGuard said so itself; in the job such a signal is caught (JobSignals), and a
  // death by it is news.
  if (end.stage == RankStage::starting && signalled && WTERMSIG(end.status) == end.forwarded)
    return std::nullopt;
  const char* what = end.stage == RankStage::starting ? "died in MPI start-up"
                     : end.stage == RankStage::left   ? "died after leaving the job in order"
                                                      : "died without shutting down";
  const char* then = end.stage == RankStage::left
                         ? ""
                         : "; an MPI job cannot go on without it, so the job ends";
  return fmt::format("taskwire: rank {} ({} on host {}) {}: pid {} {}{} (mpiexec knows the "
                     "rank as pid {}, its watcher)",
                     end.rank, end.role.empty() ? "rank" : end.role, end.host, what, end.pid,
                     describe_wait_status(end.status), then, end.watcher_pid);
}

}  // namespace taskwire::comm::mpi
