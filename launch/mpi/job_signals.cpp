#include <taskwire/launch/mpi/job_signals.hpp>
#include <taskwire/runtime/force_exit.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <system_error>
#include <unistd.h>

namespace taskwire::mpi::detail {
namespace {

std::atomic<int> g_write_fd{-1};

// Async-signal-safe: one write(2) of the signal number, errno preserved.
void on_signal(int signo) {
  const int saved = errno;
  const int fd = g_write_fd.load();
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(signo);
    [[maybe_unused]] const auto n = ::write(fd, &byte, 1);
  }
  errno = saved;
}

// Bytes that are not signal numbers.
constexpr unsigned char kStopResponder = 0;
constexpr unsigned char kDeliverToNewHandler = 255;

void write_byte(int fd, unsigned char byte) {
  [[maybe_unused]] const auto n = ::write(fd, &byte, 1);
}

}  // namespace

JobSignals::JobSignals(double grace_seconds) : grace_seconds_(grace_seconds) {
  if (::pipe2(pipe_, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "JobSignals: pipe2");
  g_write_fd = pipe_[1];
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(SIGINT, &action, &previous_int_) != 0 ||
      ::sigaction(SIGTERM, &action, &previous_term_) != 0)
    throw std::system_error(errno, std::generic_category(), "JobSignals: sigaction");
  responder_ = std::thread([this] { respond(); });
}

JobSignals::~JobSignals() {
  ::sigaction(SIGINT, &previous_int_, nullptr);
  ::sigaction(SIGTERM, &previous_term_, nullptr);
  g_write_fd = -1;
  write_byte(pipe_[1], kStopResponder);
  responder_.join();
  ::close(pipe_[0]);
  ::close(pipe_[1]);
}

void JobSignals::set_handler(std::function<void(int)> handler) {
  std::lock_guard lock(handler_mu_);
  handler_ = std::move(handler);
  if (handler_ && received_ && !delivered_) write_byte(pipe_[1], kDeliverToNewHandler);
}

void JobSignals::forward(int signo) {
  if (signo > 0 && signo < kDeliverToNewHandler)
    write_byte(pipe_[1], static_cast<unsigned char>(signo));
}

void JobSignals::respond() {
  for (;;) {
    unsigned char byte = 0;
    const auto n = ::read(pipe_[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || byte == kStopResponder) return;
    if (byte != kDeliverToNewHandler) {
      const int signo = byte;
      int first = 0;
      if (!received_.compare_exchange_strong(first, signo)) {
        spdlog::info("{} ignored: {} is already ending this rank", ::strsignal(signo),
                     ::strsignal(first));
        continue;
      }
      runtime::force_exit_after(grace_seconds_,
                                fmt::format("still ending after {}", ::strsignal(signo)),
                                128 + signo);
    }
    std::lock_guard lock(handler_mu_);
    if (handler_ && !delivered_) {
      delivered_ = true;
      handler_(received_);
    }
  }
}

}  // namespace taskwire::mpi::detail
