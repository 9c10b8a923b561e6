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

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
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

comm::ConnectOptions connect_as_nanny(comm::Registry& registry, std::chrono::milliseconds timeout) {
  comm::ConnectOptions connect;
  connect.timeout = timeout;
  connect.handshake = comm::HandshakeOptions::from(registry.context().config());
  connect.handshake->role = "nanny";
  connect.handshake->expect_role = "scheduler";
  return connect;
}

void report_death(comm::Registry& registry, const NannyOptions& o, protocol::WorkerDied died) {
  const auto timeout = std::chrono::milliseconds(5000);
  try {
    auto comm = comm::connect(registry, scheduler_address(o), connect_as_nanny(registry, timeout));
    runtime::BatchWriter batch;
    batch.add(protocol::Op::worker_died, died);
    comm::write_sync(comm, batch.take(), timeout);
    comm->close();
  } catch (const std::exception& e) {
    spdlog::warn("nanny: could not tell the scheduler that worker {} died: {}", died.name,
                 e.what());
  }
}

// The nanny's own link to its scheduler, opened once its worker has joined. A scheduler
// that shuts down says so on it (close_worker, as to its workers), so that a nanny whose
// worker is dead, or starting and not yet joined, ends instead of restarting a worker for
// a cluster that is gone. A link that merely fails (a scheduler that crashed or is cut off)
// says nothing: the nanny goes on restarting its worker, whose wait for the scheduler is
// bounded by --death-timeout. Its handlers run on the context's threads; the nanny's loop
// reads the outcome (shutting_down()) on its own.
class SchedulerLink : public std::enable_shared_from_this<SchedulerLink> {
 public:
  SchedulerLink(comm::Registry& registry, const NannyOptions& options)
      : registry_(registry), options_(options) {}
  ~SchedulerLink() { abort(); }

  /// Opens the link unless it is open or opening (at most one attempt a second). Non-blocking.
  void open();
  void abort() noexcept {
    comm::CommPtr comm;
    {
      std::lock_guard lock(mu_);
      comm.swap(comm_);
    }
    if (comm) comm->abort();  // outside the lock: its read handler takes it
  }
  /// The scheduler said it is shutting down; `reason` is what it said.
  bool shutting_down() const { return shutting_down_.load(); }
  std::string reason() const {
    std::lock_guard lock(mu_);
    return reason_;
  }

 private:
  void read(const comm::CommPtr& comm);
  void on_message(const runtime::Message& m);

  comm::Registry& registry_;
  const NannyOptions& options_;
  mutable std::mutex mu_;
  comm::CommPtr comm_;
  bool opening_ = false;
  Clock::time_point last_attempt_{};
  std::string reason_;
  std::atomic<bool> shutting_down_{false};
};

void SchedulerLink::open() {
  std::string address;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    if (comm_ || opening_ || now - last_attempt_ < std::chrono::seconds(1)) return;
    last_attempt_ = now;
    opening_ = true;
  }
  try {
    address = scheduler_address(options_);
  } catch (const std::exception& e) {
    spdlog::debug("nanny: no scheduler address for its link: {}", e.what());
    std::lock_guard lock(mu_);
    opening_ = false;
    return;
  }
  auto options = connect_as_nanny(registry_, std::chrono::milliseconds(5000));
  options.retry_refused = false;
  std::weak_ptr<SchedulerLink> weak = shared_from_this();
  comm::async_connect(registry_, address, std::move(options),
                      [weak, address](error_code ec, std::string detail, comm::CommPtr comm) {
                        auto self = weak.lock();
                        if (!self) {
                          if (comm) comm->abort();
                          return;
                        }
                        {
                          std::lock_guard lock(self->mu_);
                          self->opening_ = false;
                          if (ec) return spdlog::debug("nanny: no link to {}: {}", address, detail);
                          self->comm_ = comm;
                        }
                        spdlog::info("nanny: linked to scheduler {} (told there of a shutdown)",
                                     address);
                        self->read(comm);
                      });
}

void SchedulerLink::read(const comm::CommPtr& comm) {
  std::weak_ptr<SchedulerLink> weak = shared_from_this();
  comm->async_read([weak, comm](error_code ec, runtime::Message m) {
    auto self = weak.lock();
    if (!self) return;
    if (!ec) {
      self->on_message(m);
      return self->read(comm);
    }
    std::lock_guard lock(self->mu_);
    if (self->comm_ == comm) self->comm_.reset();  // opened again once the worker joins
  });
}

void SchedulerLink::on_message(const runtime::Message& m) {
  try {
    runtime::for_each_op(m, [&](runtime::OpReader& r) {
      if (r.op() != protocol::Op::close_worker) return;
      const auto close = r.body<protocol::CloseWorker>();
      if (close.rejoin) return;
      std::lock_guard lock(mu_);
      reason_ = close.reason;
      shutting_down_ = true;
    });
  } catch (const std::exception& e) {
    spdlog::warn("nanny: malformed message from the scheduler: {}", e.what());
  }
}

class Nanny {
 public:
  Nanny(comm::Registry& registry, const NannyOptions& options)
      : registry_(registry), options_(options),
        link_(std::make_shared<SchedulerLink>(registry, options)) {}
  int run();

 private:
  void start_child();
  /// The child has ended with `status`; returns the nanny's exit status, or -1 to go on.
  int on_child_ended(int status);
  /// After a shutdown notice: the nanny's status once its child has ended with `status`.
  int status_after_shutdown(int status) const;
  void on_stop_signal(int signo);
  void on_scheduler_shutdown();
  bool stopping() const { return stop_signal_ || scheduler_shut_down_; }
  std::chrono::milliseconds restart_delay();

  comm::Registry& registry_;
  const NannyOptions& options_;
  crash::SharedRecord record_;
  std::shared_ptr<SchedulerLink> link_;
  pid_t child_ = -1;
  int stop_signal_ = 0;
  bool scheduler_shut_down_ = false;
  Clock::time_point kill_at_{};
  Clock::time_point restart_at_{};
  bool restart_pending_ = false;
  /// Start the child with rejoin_args: it left with kExitRejoin, or died after it had
  /// joined, so its wait for a scheduler that does not answer is bounded by --death-timeout.
  bool rejoining_ = false;
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
    if (link_->shutting_down() && !scheduler_shut_down_) on_scheduler_shutdown();
    const auto now = Clock::now();
    if (stopping() && child_ > 0 && now >= kill_at_) {
      spdlog::warn("nanny: worker process {} did not stop within {} ms; killing it", child_,
                   options_.stop_grace.count());
      ::kill(child_, SIGKILL);
      kill_at_ = now + std::chrono::hours(1);
    }
    int status = 0;
    if (child_ > 0 && ::waitpid(child_, &status, WNOHANG) == child_) {
      child_ = -1;
      if (scheduler_shut_down_) return status_after_shutdown(status);
      if (const int rc = on_child_ended(status); rc >= 0) return rc;
    }
    if (restart_pending_ && !stopping() && Clock::now() >= restart_at_) {
      restart_pending_ = false;
      start_child();
    }
    if (child_ < 0 && stop_signal_) return 128 + stop_signal_;
    if (child_ < 0 && scheduler_shut_down_) return 0;
    if (child_ > 0 && record_.registered()) link_->open();
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

// The worker is told to stop as well: one that has joined was told by the scheduler too, but
// one starting, or waiting to join again, would wait for a scheduler that is gone.
void Nanny::on_scheduler_shutdown() {
  scheduler_shut_down_ = true;
  restart_pending_ = false;
  spdlog::info("nanny: the scheduler said: {}; the worker is not restarted",
               link_->reason());
  if (child_ > 0) ::kill(child_, SIGTERM);
  kill_at_ = Clock::now() + options_.stop_grace;
}

int Nanny::status_after_shutdown(int status) const {
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code != 0 && code != kExitRejoin && code != kExitMemoryLimit) {
      spdlog::warn("nanny: the worker exited with status {}", code);
      return code;
    }
  } else if (!stop_signal_) {
    spdlog::info("nanny: the worker ended by {} as the scheduler shut down",
                 crash::describe_signal(WTERMSIG(status)));
  }
  return stop_signal_ ? 128 + stop_signal_ : 0;
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
    rejoining_ = true;  // from now on a scheduler that does not answer is waited for a while only
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
  // Started as /proc/self/exe (the nanny's own binary, even one replaced on disk since), the
  // process is named "exe" in top and ps -e; named as its parent would be instead.
  ::prctl(PR_SET_NAME, "taskwire-worker");
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // the nanny gone: shut down as if told to
  if (::getppid() != nanny) ::raise(SIGTERM);
  return true;
}

}  // namespace taskwire::worker
