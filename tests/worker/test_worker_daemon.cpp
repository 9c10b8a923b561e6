// The taskwire-worker daemon as a separate process, driven by the fake scheduler over tcp:
// --preload makes a library's functions runnable, close_worker and SIGTERM end it with exit
// status 0, a lost scheduler or an unloadable library with a message and a non-zero status.
#include "tests/worker/fake_scheduler.hpp"

#include <taskwire/comm/backends.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace taskwire;
using namespace taskwire::worker::testing;
using Catch::Contains;

namespace {

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

struct Fixture {
  Fixture() : ctx(runtime::Config::from_env(), 1), registry(ctx) {
    comm::register_builtin_backends(registry);
    ctx.start();
    scheduler = std::make_unique<FakeScheduler>(registry, "tcp://127.0.0.1:0");
  }
  ~Fixture() {
    scheduler.reset();
    ctx.stop();
  }
  std::vector<std::string> args(const std::string& name) {
    return {scheduler->address(), "--nthreads", "2", "--preload", TASKWIRE_PRELOAD_LIB,
            "--name", name, "--log-level", "warn", "--heartbeat-ms", "100"};
  }
  runtime::Context ctx;
  comm::Registry registry;
  std::unique_ptr<FakeScheduler> scheduler;
};

runtime::Message compute(std::string key, std::string function, long arg) {
  runtime::BatchWriter w;
  add_compute(w, std::move(key), std::move(function), {frame_arg(0)}, {runtime::to_frame(arg)});
  return w.take();
}

}  // namespace

TEST_CASE("worker daemon: --preload'ed functions run, and close_worker ends it with status 0",
          "[worker][daemon]") {
  Fixture fx;
  Daemon d(fx.args("dw"));
  auto s = fx.scheduler->accept(15s);
  auto reg = s->next(Op::register_worker);
  REQUIRE(reg);
  CHECK(reg->registered.name == "dw");
  CHECK(reg->registered.nthreads == 2);
  CHECK_THAT(reg->registered.address, Catch::StartsWith("tcp://127.0.0.1:"));

  s->send(compute("sq", "preloaded_square", 7));
  auto fin = s->next(Op::task_finished);
  REQUIRE(fin);
  CHECK(fin->finished.key == "sq");
  s->send(compute("th", "preloaded_throw", 1));
  auto err = s->next(Op::task_erred);
  REQUIRE(err);
  CHECK(err->erred.message == "preloaded_throw: no such luck");
  CHECK(err->erred.exception_type == "std::domain_error");

  // The result is served to anyone who asks the daemon's contact address.
  auto peer = comm::connect(fx.registry, reg->registered.address, std::chrono::milliseconds(5000));
  runtime::BatchWriter req;
  req.add(Op::get_data, protocol::GetData{1, {"sq"}});
  comm::write_sync(peer, req.take());
  long value = 0;
  runtime::for_each_op(comm::read_sync(peer), [&](runtime::OpReader& r) {
    auto reply = r.body<protocol::DataReply>();
    REQUIRE(r.frames().size() == 1);
    value = runtime::from_frame<long>(r.frames()[0]);
  });
  CHECK(value == 49);
  peer->close();

  runtime::BatchWriter close;
  close.add(Op::close_worker, protocol::Empty{});
  s->send(close.take());
  CHECK(s->next(Op::worker_closing));
  auto status = d.wait();
  REQUIRE(status);
  INFO(d.stderr_text());
  CHECK(*status == 0);
}

TEST_CASE("worker daemon: SIGTERM shuts it down cleanly", "[worker][daemon]") {
  Fixture fx;
  Daemon d(fx.args("dw-term"));
  auto s = fx.scheduler->accept(15s);
  REQUIRE(s->next(Op::register_worker));
  d.signal(SIGTERM);
  CHECK(s->next(Op::worker_closing));
  auto status = d.wait();
  REQUIRE(status);
  INFO(d.stderr_text());
  CHECK(*status == 0);
}

TEST_CASE("worker daemon: losing the scheduler is a non-zero exit with a message",
          "[worker][daemon]") {
  Fixture fx;
  Daemon d(fx.args("dw-lost"));
  auto s = fx.scheduler->accept(15s);
  REQUIRE(s->next(Op::register_worker));
  s->comm->abort();
  auto status = d.wait();
  REQUIRE(status);
  CHECK(*status != 0);
  CHECK_THAT(d.stderr_text(), Contains("scheduler"));
}

TEST_CASE("worker daemon: a library that cannot be loaded is a clear error",
          "[worker][daemon]") {
  Fixture fx;
  Daemon d({fx.scheduler->address(), "--preload", "/nonexistent/libnothing.so"});
  auto status = d.wait();
  REQUIRE(status);
  CHECK(*status != 0);
  CHECK_THAT(d.stderr_text(), Contains("--preload /nonexistent/libnothing.so") &&
                                  Contains("cannot load"));
}

TEST_CASE("worker daemon: bad command lines exit 2 and --help exits 0", "[worker][daemon]") {
  {
    Daemon d({"--nthreads", "0", "tcp://127.0.0.1:1"});
    auto status = d.wait();
    REQUIRE(status);
    CHECK(*status == 2);
    CHECK_THAT(d.stderr_text(), Contains("--nthreads"));
  }
  {
    Daemon d({"--inline-task-us=-1", "tcp://127.0.0.1:1"});
    auto status = d.wait();
    REQUIRE(status);
    CHECK(*status == 2);
    CHECK_THAT(d.stderr_text(), Contains("--inline-task-us"));
  }
  {
    Daemon d({});
    auto status = d.wait();
    REQUIRE(status);
    CHECK(*status == 2);
    CHECK_THAT(d.stderr_text(), Contains("no scheduler address"));
  }
  {
    Daemon d({"--help"});
    auto status = d.wait();
    REQUIRE(status);
    CHECK(*status == 0);
  }
}
