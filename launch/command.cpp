#include <taskwire/launch/command.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace taskwire::launch {

namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    // Close-on-exec: a command spawned by another thread at the same time must not inherit
    // this one's pipe ends (its stdin would then never see end-of-file).
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::strerror(errno));
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() { close_read(), close_write(); }
  void close_read() { if (read >= 0) ::close(read), read = -1; }
  void close_write() { if (write >= 0) ::close(write), write = -1; }
};

// A write to a command that already exited raises SIGPIPE, which would kill the program:
// block it on this thread while writing and drop the one it raised.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlocked() {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_{}, old_{};
};

pid_t spawn(const std::vector<std::string>& argv, Pipe& in, Pipe& out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.read, 0);
  posix_spawn_file_actions_adddup2(&actions, out.write, 1);
  posix_spawn_file_actions_adddup2(&actions, out.write, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  return pid;
}

// Feeds `input` and collects the output until the command closes its output or the deadline.
bool pump(Pipe& in, Pipe& out, const std::string& input, std::string& output,
          Clock::time_point deadline) {
  SigpipeBlocked blocked;
  std::size_t written = 0;
  if (input.empty()) in.close_write();
  char buf[4096];
  while (out.read >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd fds[2] = {{out.read, POLLIN, 0}, {in.write, POLLOUT, 0}};
    const int n = ::poll(fds, in.write >= 0 ? 2 : 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) return false;
    if (n <= 0) continue;
    if (in.write >= 0 && fds[1].revents) {
      const ssize_t w = ::write(in.write, input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<std::size_t>(w);
      if (w < 0 || written == input.size()) in.close_write();
    }
    if (fds[0].revents) {
      const ssize_t r = ::read(out.read, buf, sizeof buf);
      if (r > 0) output.append(buf, static_cast<std::size_t>(r));
      else if (r == 0 || errno != EINTR) out.close_read();
    }
  }
  return true;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          std::chrono::milliseconds timeout) {
  if (argv.empty()) throw std::invalid_argument("run_command: no command");
  Pipe in, out;
  const pid_t pid = spawn(argv, in, out);
  in.close_read();
  out.close_write();
  CommandResult result;
  const auto deadline = Clock::now() + timeout;
  bool finished = pump(in, out, input, result.output, deadline);
  int status = 0;
  // A command that closed its output may still be running: it too gets the deadline.
  while (finished && ::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() >= deadline) finished = false;
    else ::usleep(2000);
  }
  if (!finished) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!finished)
    result.output += fmt::format("\n(killed after {} ms without finishing)", timeout.count());
  return result;
}

std::string shell_quote(const std::string& word) {
  const bool plain =
      !word.empty() && word.find_first_of(" \t\n'\"$\\;&|<>*?()`~#{}[]!") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    line += shell_quote(a);
  }
  return line;
}

}  // namespace taskwire::launch
