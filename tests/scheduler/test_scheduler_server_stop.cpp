// SchedulerServer::stop() and its destructor when the server's strand is too busy to take
// the shutdown in hand within stop_timeout: they return, and what they posted runs later
// against state it owns (it used to set a promise on their returned stack frames).
#include <taskwire/comm/backends.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>

#if defined(__SANITIZE_ADDRESS__)
// Only this mode of ASan sees a write through a pointer into a frame that has returned.
extern "C" const char* __asan_default_options() { return "detect_stack_use_after_return=1"; }
#endif

using namespace taskwire;
using namespace std::chrono_literals;

namespace {

// Occupies the server's strand (through inspect()) until `release` is set.
std::future<int> occupy_strand(scheduler::SchedulerServer& server,
                               std::shared_future<void> release) {
  auto busy = std::make_shared<std::promise<void>>();
  auto started = busy->get_future();
  auto occupied = std::async(std::launch::async, [&server, busy, release] {
    return server.inspect([&](const scheduler::SchedulerState&) {
      busy->set_value();
      release.wait();
      return 1;
    });
  });
  REQUIRE(started.wait_for(10s) == std::future_status::ready);
  return occupied;
}

// With one context thread, handlers queued on the server's strand before this call have all
// run once it returns: each post here runs after whatever the strand had queued before it.
void let_queued_handlers_run(runtime::Context& ctx) {
  for (int round = 0; round < 3; ++round) {
    auto ran = std::make_shared<std::promise<void>>();
    auto done = ran->get_future();
    asio::post(ctx.executor(), [ran] { ran->set_value(); });
    REQUIRE(done.wait_for(10s) == std::future_status::ready);
  }
}

}  // namespace

TEST_CASE("scheduler server: stop() and the destructor that time out on a busy strand leave "
          "nothing dangling",
          "[scheduler][server]") {
  runtime::Context ctx(runtime::Config::from_env(), 1);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  scheduler::SchedulerServerOptions options;
  options.listen = {"inproc://auto"};
  options.stop_timeout = 50ms;
  auto server = std::make_unique<scheduler::SchedulerServer>(registry, options);
  server->start();
  auto finished = server->finished();

  // stop() gives up waiting; the shutdown runs once the strand is free.
  std::promise<void> release_first;
  auto first = occupy_strand(*server, release_first.get_future().share());
  server->stop();
  CHECK(finished.wait_for(0s) != std::future_status::ready);  // it did time out
  release_first.set_value();
  CHECK(first.get() == 1);
  REQUIRE(finished.wait_for(10s) == std::future_status::ready);

  // The destructor's stop() and drain both give up; their handlers run after it returned.
  std::promise<void> release_second;
  auto second = occupy_strand(*server, release_second.get_future().share());
  server.reset();
  release_second.set_value();
  CHECK(second.get() == 1);
  let_queued_handlers_run(ctx);
  ctx.stop();
}
