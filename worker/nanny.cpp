#include <taskwire/worker/nanny.hpp>

#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/batch.hpp>
#include <taskwire/runtime/scheduler_file.hpp>
#include <taskwire/worker/crash_record.hpp>
#include <taskwire/worker/memory_limits.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <system_error>

extern char** environ;

namespace taskwire::worker {

namespace {
using Clock = std::chrono::steady_clock;
// A child that never joined its scheduler and died is restarted after this, doubling with
// each such death in a row (a worker that crashes while starting), up to kMaxRestartDelay.
constexpr auto kFirstRestartDelay = std::chrono::milliseconds(100);
constexpr auto kMaxRestartDelay = std::chrono::milliseconds(5000);

sigset_t nanny_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  return set;
}

pid_t spawn_child(const std::vector<std::string>& args, int record_fd) {
  const std::string prefix = std::string(crash::kRecordFdVariable) + "=";
  std::string record_variable = prefix + std::to_string(record_fd);
  std::vector<char*> env{record_variable.data()};
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.push_back(*e);
  }
  env.push_back(nullptr);
  std::string program = "taskwire-worker";
  std::vector<char*> argv{program.data()};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults = nanny_signals();
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", nullptr, &attr, argv.data(), env.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "cannot start the worker");
  return pid;
}

std::string scheduler_address(const NannyOptions& o) {
  if (!o.scheduler_file.empty())
    return runtime::SchedulerFile::read(o.scheduler_file).address_for("tcp");
  return o.scheduler;
}

void report_death(comm::Registry& registry, const NannyOptions& o, protocol::WorkerDied died) {
  const auto timeout = std::chrono::milliseconds(5000);
  try {
    comm::ConnectOptions connect;
    connect.timeout = timeout;
    connect.handshake = comm::HandshakeOptions::from(registry.context().config());
    connect.handshake->role = "nanny";
    connect.handshake->expect_role = "scheduler";
    auto comm = comm::connect(registry, scheduler_address(o), connect);
    runtime::BatchWriter batch;
    batch.add(protocol::Op::worker_died, died);
    comm::write_sync(comm, batch.take(), timeout);
    comm->close();
  } catch (const std::exception& e) {
    spdlog::warn("nanny: could not tell the scheduler that worker {} died: {}", died.name,
                 e.what());
  }
}

class Nanny {
 public:
  Nanny(comm::Registry& registry, const NannyOptions& options)
      : registry_(registry), options_(options) {}
  int run();

 private:
  void start_child();
  /// The child has ended with `status`; returns the nanny's exit status, or -1 to go on.
  int on_child_ended(int status);
  void on_stop_signal(int signo);
  std::chrono::milliseconds restart_delay();

  comm::Registry& registry_;
  const NannyOptions& options_;
  crash::SharedRecord record_;
  pid_t child_ = -1;
  int stop_signal_ = 0;
  Clock::time_point kill_at_{};
  Clock::time_point restart_at_{};
  bool restart_pending_ = false;
  bool rejoining_ = false;  ///< the child left with kExitRejoin: start it with rejoin_args
  int deaths_before_joining_ = 0;
  std::deque<Clock::time_point> deaths_;
};

void Nanny::start_child() {
  record_.reset();
  child_ = spawn_child(rejoining_ && !options_.rejoin_args.empty() ? options_.rejoin_args
                                                                    : options_.child_args,
                       record_.fd());
  spdlog::info("nanny: started worker process {}", child_);
}

int Nanny::run() {
  start_child();
  const sigset_t signals = nanny_signals();
  for (;;) {
    timespec wait{0, 200'000'000};
    siginfo_t info{};
    const int signo = ::sigtimedwait(&signals, &info, &wait);
    if (signo == SIGINT || signo == SIGTERM || signo == SIGHUP) on_stop_signal(signo);
    const auto now = Clock::now();
    if (stop_signal_ && child_ > 0 && now >= kill_at_) {
      spdlog::warn("nanny: worker process {} did not stop within {} ms; killing it", child_,
                   options_.stop_grace.count());
      ::kill(child_, SIGKILL);
      kill_at_ = now + std::chrono::hours(1);
    }
    int status = 0;
    if (child_ > 0 && ::waitpid(child_, &status, WNOHANG) == child_) {
      child_ = -1;
      if (const int rc = on_child_ended(status); rc >= 0) return rc;
    }
    if (restart_pending_ && !stop_signal_ && now >= restart_at_) {
      restart_pending_ = false;
      start_child();
    }
    if (stop_signal_ && child_ < 0) return 128 + stop_signal_;
  }
}

void Nanny::on_stop_signal(int signo) {
  if (stop_signal_) {  // a second signal: no more patience
    if (child_ > 0) ::kill(child_, SIGKILL);
    return;
  }
  stop_signal_ = signo;
  spdlog::info("nanny: signal {} received, stopping the worker", signo);
  if (child_ > 0) ::kill(child_, SIGTERM);
  kill_at_ = Clock::now() + options_.stop_grace;
}

int Nanny::on_child_ended(int status) {
  // A worker past its memory's terminate threshold leaves with kExitMemoryLimit for a
  // restart, as if it had been killed (Dask's nanny kills it itself).
  const bool memory_exit = WIFEXITED(status) && WEXITSTATUS(status) == kExitMemoryLimit;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kExitRejoin && !stop_signal_) {
    spdlog::warn("nanny: the worker lost its scheduler and could not stop in time; starting "
                 "a fresh one to join again");
    restart_at_ = Clock::now();
    restart_pending_ = true;
    rejoining_ = true;
    return -1;
  }
  rejoining_ = false;
  if (WIFEXITED(status) && !memory_exit) {
    const int code = WEXITSTATUS(status);
    if (code != 0) spdlog::warn("nanny: the worker exited with status {}", code);
    return stop_signal_ && code == 0 ? 0 : code;
  }
  if (stop_signal_) return 128 + stop_signal_;
  protocol::WorkerDied died{record_.address(), record_.name(),
                            memory_exit ? std::string("memory use past its terminate threshold")
                                        : crash::describe_signal(WTERMSIG(status)),
                            {}};
  std::string running;
  for (const auto& r : record_.running()) {
    running += fmt::format("{}'{}' ({})", running.empty() ? "" : ", ", r.key, r.function);
    died.running.push_back(r.key);
  }
  spdlog::error("nanny: worker {} died of {} while running {}",
                died.name.empty() ? "(not yet joined)" : died.name, died.cause,
                running.empty() ? "no task" : running);
  if (record_.registered()) {
    deaths_before_joining_ = 0;
    report_death(registry_, options_, std::move(died));
  } else {
    ++deaths_before_joining_;
  }
  const auto now = Clock::now();
  deaths_.push_back(now);
  while (!deaths_.empty() && now - deaths_.front() > std::chrono::minutes(1)) deaths_.pop_front();
  if (static_cast<int>(deaths_.size()) > options_.restart_limit) {
    spdlog::error("nanny: the worker died {} times within a minute (--restart-limit {}); "
                  "giving up",
                  deaths_.size(), options_.restart_limit);
    return 1;
  }
  const auto delay = restart_delay();
  spdlog::info("nanny: restarting the worker in {} ms", delay.count());
  restart_at_ = now + delay;
  restart_pending_ = true;
  return -1;
}

std::chrono::milliseconds Nanny::restart_delay() {
  if (deaths_before_joining_ == 0) return std::chrono::milliseconds(0);
  auto delay = kFirstRestartDelay;
  for (int i = 1; i < deaths_before_joining_ && delay < kMaxRestartDelay; ++i) delay *= 2;
  return std::min(delay, std::chrono::duration_cast<std::chrono::milliseconds>(kMaxRestartDelay));
}
}  // namespace

void block_nanny_signals() {
  const sigset_t set = nanny_signals();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int run_nanny(comm::Registry& registry, const NannyOptions& options) {
  Nanny nanny(registry, options);
  return nanny.run();
}

bool adopt_nanny() {
  const char* fd = std::getenv(crash::kRecordFdVariable);
  if (!fd) return false;
  const pid_t nanny = crash::nanny_pid();  // maps the nanny's record while its descriptor is known
  ::fcntl(std::atoi(fd), F_SETFD, FD_CLOEXEC);  // not for the tasks' own children
  ::unsetenv(crash::kRecordFdVariable);
  if (nanny == 0) return false;  // not a record a nanny made
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // the nanny gone: shut down as if told to
  if (::getppid() != nanny) ::raise(SIGTERM);
  return true;
}

}  // namespace taskwire::worker
