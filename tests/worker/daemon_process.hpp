#pragma once
// A taskwire-worker daemon (or any program) started as a child process for a test.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace taskwire::worker::testing {

using namespace std::chrono_literals;

/// A child process with its stderr captured in a file; killed if still running at the end.
class Daemon {
 public:
  explicit Daemon(std::vector<std::string> args) {
    char path[] = "/tmp/taskwire-worker-test-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    stderr_path_ = path;
    args.insert(args.begin(), TASKWIRE_WORKER_EXE);
    std::vector<char*> argv;  // built before fork: the child may only make async-signal-safe calls
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(fd, 2);
      const int devnull = ::open("/dev/null", O_WRONLY);
      if (devnull >= 0) ::dup2(devnull, 1);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fd);
  }
  ~Daemon() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::remove(stderr_path_.c_str());
  }
  /// The exit status, if the process ended within `timeout`; -signal if it was killed.
  std::optional<int> wait(std::chrono::milliseconds timeout = 15s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!status_) {
      int st = 0;
      const pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
      else if (std::chrono::steady_clock::now() > deadline) break;
      else std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return status_;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  pid_t pid() const noexcept { return pid_; }
  /// True once the daemon's stderr holds `text`; false after `timeout`.
  bool wait_for_stderr(const std::string& text, std::chrono::milliseconds timeout = 20s) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (stderr_text().find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  std::string stderr_text() const {
    std::ifstream in(stderr_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string stderr_path_;
};

}  // namespace taskwire::worker::testing
