#include <taskwire/comm/mpi/mpi_exits.hpp>
#include <taskwire/runtime/process_info.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <iterator>
#include <fstream>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace taskwire::comm::mpi {
namespace {

constexpr const char* kShmDir = "/dev/shm/";
constexpr const char* kWakePrefix = "taskwire-wake-";

// The guard's state, read in signal context: fixed buffers, set before the handlers go in.
constexpr int kGuarded[] = {SIGINT, SIGTERM, SIGHUP};
constexpr std::size_t kNumGuarded = std::size(kGuarded);
// Paths of the names to remove, each kGuardPath bytes, NUL-terminated (set before the
// handlers go in, freed after they are gone).
constexpr std::size_t kGuardPath = 64;
char* g_guard_paths = nullptr;
std::size_t g_guard_count = 0;
char g_guard_line[kNumGuarded][192];
std::size_t g_guard_line_len[kNumGuarded];
struct sigaction g_guard_previous[kNumGuarded];
bool g_guard_installed[kNumGuarded];

void on_startup_signal(int signo) {
  const int saved = errno;
  for (std::size_t i = 0; i < g_guard_count; ++i) ::unlink(g_guard_paths + i * kGuardPath);
  for (std::size_t i = 0; i < kNumGuarded; ++i) {
    if (kGuarded[i] != signo) continue;
    [[maybe_unused]] const auto n =
        ::write(STDERR_FILENO, g_guard_line[i], g_guard_line_len[i]);
    ::sigaction(signo, &g_guard_previous[i], nullptr);
  }
  errno = saved;
  ::raise(signo);  // its default action, now that the name is gone
}

}  // namespace

std::string Farewell::str() const {
  switch (kind) {
    case Kind::orderly: return "shut down";
    case Kind::exit: return fmt::format("called exit({0}) (or returned {0} from main)", code);
    case Kind::signal: return "received " + runtime::describe_signal(code);
  }
  return "left";
}

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("was killed by {}{}", runtime::describe_signal(WTERMSIG(status)),
                       WCOREDUMP(status) ? ", core dumped" : "");
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("ended (wait status {:#x})", status);
}

// /proc/PID/stat: its state is field 3, after the command in parentheses (which may itself
// hold spaces and parentheses: hence the last ')'); the exit code is the last field (Linux
// 3.5).
std::optional<int> exit_status_of(long pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z')
    return std::nullopt;
  const auto last = line.find_last_of(' ');
  if (last == std::string::npos || last < close) return std::nullopt;
  char* end = nullptr;
  const long code = std::strtol(line.c_str() + last + 1, &end, 10);
  if (end == line.c_str() + last + 1) return std::nullopt;
  return static_cast<int>(code);
}

int launcher_socket_fd() noexcept {
  const char* text = std::getenv("PMI_FD");
  if (!text || !*text) return -1;
  char* end = nullptr;
  const long fd = std::strtol(text, &end, 10);
  return *end == '\0' && fd >= 0 && fd < 1 << 20 ? static_cast<int>(fd) : -1;
}

bool LauncherLinks::hold(int pidfd, int fd) {
#ifdef SYS_pidfd_getfd
  if (pidfd < 0 || fd < 0) return false;
  const int copy = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  if (copy < 0) return false;
  struct stat st {};
  // A file (a program that sent its output there) links to nothing: not held.
  if (::fstat(copy, &st) != 0 || !(S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode))) {
    ::close(copy);
    return false;
  }
  // pidfd_getfd sets it already: a child the program starts must not hold the link.
  ::fcntl(copy, F_SETFD, FD_CLOEXEC);
  fds_.push_back(copy);
  return true;
#else
  (void)pidfd;
  (void)fd;
  return false;
#endif
}

void LauncherLinks::release() noexcept {
  for (int fd : fds_) ::close(fd);
  fds_.clear();
}

int remove_stale_wake_names() {
  DIR* dir = ::opendir(kShmDir);
  if (!dir) return 0;
  const std::string prefix = kWakePrefix;
  int removed = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (*end != '\0' || pid <= 0) continue;  // a test's own key, or not ours
    const std::string path = kShmDir + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    // A zombie holds no mapping any more, and may stay one for a while: a rank whose watcher
    // was SIGKILLed is reaped by whatever adopts orphans, when it gets to it.
    const bool gone = (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ||
                      exit_status_of(pid).has_value();
    if (!gone) continue;
    if (::unlink(path.c_str()) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

StartupSignalGuard::StartupSignalGuard(const std::vector<std::string>& shm_names, int rank) {
  // shm_open's names live in /dev/shm on Linux; unlink(2) is what a signal handler may call.
  g_guard_count = shm_names.size();
  g_guard_paths = new char[std::max<std::size_t>(g_guard_count, 1) * kGuardPath]();
  for (std::size_t i = 0; i < g_guard_count; ++i)
    std::snprintf(g_guard_paths + i * kGuardPath, kGuardPath, "/dev/shm%s", shm_names[i].c_str());
  for (std::size_t i = 0; i < kNumGuarded; ++i) {
    const auto line = fmt::format(
        "taskwire: rank {} received {} during MPI start-up, and ends by it\n", rank,
        runtime::describe_signal(kGuarded[i]));
    g_guard_line_len[i] = std::min(line.size(), sizeof g_guard_line[i] - 1);
    std::memcpy(g_guard_line[i], line.data(), g_guard_line_len[i]);
  }
  if (shm_names.empty()) return;
  for (std::size_t i = 0; i < kNumGuarded; ++i) {
    struct sigaction now {};
    g_guard_installed[i] = false;
    if (::sigaction(kGuarded[i], nullptr, &now) != 0 || now.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = on_startup_signal;
    sigemptyset(&action.sa_mask);
    g_guard_installed[i] = ::sigaction(kGuarded[i], &action, &g_guard_previous[i]) == 0;
  }
}

StartupSignalGuard::~StartupSignalGuard() {
  for (std::size_t i = 0; i < kNumGuarded; ++i)
    if (g_guard_installed[i]) ::sigaction(kGuarded[i], &g_guard_previous[i], nullptr);
  g_guard_count = 0;
  delete[] g_guard_paths;
  g_guard_paths = nullptr;
}

}  // namespace taskwire::comm::mpi
