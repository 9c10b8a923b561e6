// The taskwire-worker daemon as a separate process, driven by the fake scheduler over tcp:
// --preload makes a library's functions runnable, close_worker and SIGTERM end it with exit
// status 0, a lost scheduler or an unloadable library with a message and a non-zero status.
#include "tests/worker/daemon_process.hpp"
#include "tests/worker/fake_scheduler.hpp"

#include <taskwire/client/client.hpp>
#include <taskwire/comm/backends.hpp>
#include <taskwire/runtime/scheduler_file.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace taskwire;
using namespace taskwire::worker::testing;
using Catch::Contains;

namespace {

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

/// A path in /tmp where nothing exists yet; removed at the end.
struct TempPath {
  TempPath() {
    char dir[] = "/tmp/taskwire-worker-test-dir-XXXXXX";
    REQUIRE(::mkdtemp(dir));
    directory = dir;
    path = directory + "/scheduler.json";
  }
  ~TempPath() {
    std::remove(path.c_str());
    ::rmdir(directory.c_str());
  }
  std::string directory, path;
};

/// A loopback port nothing listens on (it was free a moment ago).
std::string free_tcp_address(comm::Registry& registry) {
  auto probe = comm::listen(registry, "tcp://127.0.0.1:0", [](comm::CommPtr c) { c->abort(); });
  return probe->contact_address();
}

/// Tells the daemon to close, and checks that it exits 0.
void close_and_expect_clean_exit(Mailbox& s, Daemon& d) {
  runtime::BatchWriter close;
  close.add(Op::close_worker, protocol::CloseWorker{"the test is over", false});
  s.send(close.take());
  CHECK(s.next(Op::worker_closing));
  auto status = d.wait();
  REQUIRE(status);
  INFO(d.stderr_text());
  CHECK(*status == 0);
}

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
  // A client given the worker's address instead of the scheduler's is told so at once.
  CHECK_THROWS_WITH(Client(reg->registered.address),
                    Contains(reg->registered.address) &&
                        Contains("is a worker, not a scheduler: give the scheduler's address"));

  runtime::BatchWriter close;
  close.add(Op::close_worker, protocol::CloseWorker{"the test is over", false});
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

TEST_CASE("worker daemon: losing the scheduler it joins again, and gone past --death-timeout "
          "it exits non-zero with a message", "[worker][daemon]") {
  Fixture fx;
  auto args = fx.args("dw-lost");
  args.insert(args.end(), {"--death-timeout", "1s"});
  Daemon d(args);
  auto s = fx.scheduler->accept(15s);
  REQUIRE(s->next(Op::register_worker));
  s->comm->abort();  // a blip: the scheduler is still there
  auto again = fx.scheduler->accept(15s);
  REQUIRE(again);
  CHECK(again->next(Op::register_worker));
  // Dropped for missing heartbeats (as after a freeze): it joins again too.
  runtime::BatchWriter drop;
  drop.add(Op::close_worker, protocol::CloseWorker{"no heartbeat for 12 s", true});
  again->send(drop.take());
  auto third = fx.scheduler->accept(15s);
  REQUIRE(third);
  CHECK(third->next(Op::register_worker));
  fx.scheduler.reset();  // now the scheduler is gone for good
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

TEST_CASE("worker daemon: --resources are announced at registration", "[worker][daemon]") {
  Fixture fx;
  auto args = fx.args("dw-gpu");
  args.insert(args.end(), {"--no-nanny", "--resources", "GPU=2, MEM=64e9"});
  Daemon d(args);
  auto s = fx.scheduler->accept(15s);
  auto reg = s->next(Op::register_worker);
  REQUIRE(reg);
  CHECK(reg->registered.resources == std::map<std::string, double>{{"GPU", 2}, {"MEM", 64e9}});
}

TEST_CASE("worker daemon: bad command lines exit 2 and --help exits 0", "[worker][daemon]") {
  for (const char* bad : {"GPU", "GPU=two", "GPU=0", "GPU=1,GPU=2"}) {
    Daemon d({"--resources", bad, "tcp://127.0.0.1:1"});
    auto status = d.wait();
    REQUIRE(status);
    CHECK(*status == 2);
    CHECK_THAT(d.stderr_text(), Contains("--resources"));
  }
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

TEST_CASE("worker daemon: started before its scheduler file exists, it waits, then joins",
          "[worker][daemon]") {
  Fixture fx;
  TempPath file;
  Daemon d({"--scheduler-file", file.path, "--preload", TASKWIRE_PRELOAD_LIB, "--name",
            "dw-early-file", "--log-level", "info", "--heartbeat-ms", "100"});
  REQUIRE(d.wait_for_stderr("waiting for the scheduler file " + file.path));
  CHECK_FALSE(d.wait(0ms).has_value());  // still waiting, under its nanny: not counted as a crash
  runtime::SchedulerFile{{fx.scheduler->address()}}.write(file.path);
  auto s = fx.scheduler->accept(20s);
  auto reg = s->next(Op::register_worker);
  REQUIRE(reg);
  CHECK(reg->registered.name == "dw-early-file");
  close_and_expect_clean_exit(*s, d);
  CHECK_THAT(d.stderr_text(), !Contains("restarting"));
}

TEST_CASE("worker daemon: started before anything listens at its address, it waits, then joins",
          "[worker][daemon]") {
  runtime::Context ctx(runtime::Config::from_env(), 1);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  const auto address = free_tcp_address(registry);
  Daemon d({address, "--preload", TASKWIRE_PRELOAD_LIB, "--name", "dw-early-address",
            "--log-level", "info", "--heartbeat-ms", "100"});
  REQUIRE(d.wait_for_stderr("waiting for the scheduler at " + address));
  CHECK_FALSE(d.wait(0ms).has_value());
  FakeScheduler scheduler(registry, address);
  auto s = scheduler.accept(20s);
  auto reg = s->next(Op::register_worker);
  REQUIRE(reg);
  CHECK(reg->registered.name == "dw-early-address");
  close_and_expect_clean_exit(*s, d);
}

TEST_CASE("worker daemon: a bounded --connect-timeout ends the wait with status 1 and says what "
          "to do", "[worker][daemon]") {
  runtime::Context ctx(runtime::Config::from_env(), 1);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  {
    Daemon d({free_tcp_address(registry), "--connect-timeout", "1s"});
    auto status = d.wait(30s);
    REQUIRE(status);
    INFO(d.stderr_text());
    CHECK(*status == 1);
    CHECK_THAT(d.stderr_text(), Contains("connection refused") &&
                                    Contains("start the scheduler first") &&
                                    Contains("--connect-timeout 1s"));
    const auto text = d.stderr_text();  // the cause is said once, not twice
    CHECK(text.find("connection refused") == text.rfind("connection refused"));
    CHECK_THAT(text, !Contains("restarting"));  // under a nanny: its exit, not a crash
  }
  {
    TempPath file;
    Daemon d({"--scheduler-file", file.path, "--connect-timeout", "500ms", "--no-nanny"});
    auto status = d.wait(30s);
    REQUIRE(status);
    INFO(d.stderr_text());
    CHECK(*status == 1);
    CHECK_THAT(d.stderr_text(), Contains("no scheduler file '" + file.path + "'"));
  }
  {
    Daemon d({"tcp://127.0.0.1:1", "--connect-timeout", "soon"});
    auto status = d.wait();
    REQUIRE(status);
    CHECK(*status == 2);
    CHECK_THAT(d.stderr_text(), Contains("--connect-timeout 'soon'"));
  }
}

TEST_CASE("worker daemon: SIGTERM while it waits for its scheduler ends it with status 0",
          "[worker][daemon]") {
  runtime::Context ctx(runtime::Config::from_env(), 1);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  TempPath file;
  for (const auto& [where, waiting] :
       {std::pair{std::vector<std::string>{"--scheduler-file", file.path}, "scheduler file"},
        std::pair{std::vector<std::string>{free_tcp_address(registry)}, "scheduler at"}}) {
    for (const char* nanny : {"--no-nanny", ""}) {
      auto args = where;
      // At debug level the first failed look is logged at once (info comes seconds later).
      args.insert(args.end(), {"--log-level", "debug"});
      if (*nanny) args.push_back(nanny);
      INFO(args[0] << " " << nanny);
      Daemon d(args);
      REQUIRE(d.wait_for_stderr(std::string("waiting for the ") + waiting));
      d.signal(SIGTERM);
      auto status = d.wait(20s);
      REQUIRE(status);
      INFO(d.stderr_text());
      CHECK(*status == 0);
    }
  }
}

TEST_CASE("worker daemon: pointed at a worker instead of a scheduler, it says so and exits 1",
          "[worker][daemon]") {
  runtime::Context ctx(runtime::Config::from_env(), 1);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  comm::ListenOptions as_worker;
  as_worker.handshake = comm::HandshakeOptions::from(ctx.config());
  as_worker.handshake->role = "worker";
  std::vector<std::string> rejections;
  std::mutex mu;
  std::condition_variable rejected;
  as_worker.on_reject = [&](error_code, std::string detail, std::string) {
    std::lock_guard lock(mu);
    rejections.push_back(std::move(detail));
    rejected.notify_all();
  };
  auto listener = comm::listen(registry, "tcp://127.0.0.1:0", [](comm::CommPtr c) { c->abort(); },
                               std::move(as_worker));
  Daemon d({listener->contact_address(), "--no-nanny"});
  auto status = d.wait(30s);
  REQUIRE(status);
  INFO(d.stderr_text());
  CHECK(*status == 1);
  CHECK_THAT(d.stderr_text(),
             Contains("is a worker, not a scheduler: give the scheduler's address"));
  {
    std::unique_lock lock(mu);  // the other side's log line, and its rejection
    REQUIRE(rejected.wait_for(lock, 20s, [&] { return !rejections.empty(); }));
    CHECK_THAT(rejections[0], Contains("not a scheduler"));
  }
  listener.reset();  // no handler runs after this
}

TEST_CASE("worker daemon: --preload says how many functions a library registered, and warns "
          "at none", "[worker][daemon]") {
  Fixture fx;
  Daemon d({fx.scheduler->address(), "--preload", TASKWIRE_PRELOAD_LIB, "--preload",
            TASKWIRE_EMPTY_PRELOAD_LIB, "--log-level", "info", "--no-nanny"});
  auto s = fx.scheduler->accept(20s);
  REQUIRE(s->next(Op::register_worker));
  const auto text = d.stderr_text();
  INFO(text);
  CHECK_THAT(text, Contains(std::string("preloaded ") + TASKWIRE_PRELOAD_LIB +
                            ": 2 functions registered"));
  CHECK_THAT(text, Contains(std::string("--preload ") + TASKWIRE_EMPTY_PRELOAD_LIB +
                            ": the library registered no functions: did you link it with "
                            "TASKWIRE_REGISTER"));
  close_and_expect_clean_exit(*s, d);
}
