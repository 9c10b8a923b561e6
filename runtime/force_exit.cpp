#include <taskwire/runtime/force_exit.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

namespace taskwire::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Never destroyed: the detached thread may still wait on it while static destructors run.
struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Clock::time_point> deadline;
  std::string note;
  int status = kForceExitCode;
  bool started = false;

  [[noreturn]] void fire(const std::string& why, int exit_status) {
    const auto line = fmt::format("taskwire: forcing exit (status {}): shutdown still running "
                                  "when the watchdog fired ({})\n",
                                  exit_status, why);
    // stderr first, without locks another thread may hold; then the log, but never wait on a
    // logger that might itself be what hangs.
    for (std::size_t off = 0; off < line.size();) {
      const auto n = ::write(STDERR_FILENO, line.data() + off, line.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    auto logged = std::async(std::launch::async, [&line] {
      spdlog::critical("{}", line.substr(0, line.size() - 1));
      spdlog::default_logger()->flush();
    });
    logged.wait_for(std::chrono::milliseconds(500));
    std::_Exit(exit_status);
  }

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      if (!deadline) {
        cv.wait(lock);
      } else if (cv.wait_until(lock, *deadline) == std::cv_status::timeout && deadline &&
                 Clock::now() >= *deadline) {
        fire(note.empty() ? "no note given" : note, status);
      }
    }
  }
};

Watchdog& watchdog() {
  static auto* w = new Watchdog;
  return *w;
}

}  // namespace

void force_exit_after(double seconds, std::string note, int status) {
  auto& w = watchdog();
  std::lock_guard lock(w.mu);
  if (seconds > 0) {
    seconds = std::min(seconds, 1e9);  // about 30 years: keeps the conversion below in range
    w.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(seconds));
    w.note = std::move(note);
    w.status = status;
    if (!w.started) {
      std::thread([&w] { w.run(); }).detach();
      w.started = true;
    }
  } else {
    w.deadline.reset();
  }
  w.cv.notify_all();
}

}  // namespace taskwire::runtime
