// runtime::Context::Drive: a thread that waits for the event loop's work runs the loop itself.
// Lingers are timed by a clock the tests move by hand (ManualParkClock): no check here depends
// on how fast a loaded machine runs.
#include <taskwire/runtime/context.hpp>
#include <taskwire/runtime/park_clock.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <thread>
#include <utility>
#include <vector>

using namespace taskwire;
using namespace std::chrono_literals;

namespace {

// The thread that runs a handler posted to `ctx` now.
std::thread::id runner_of(runtime::Context& ctx) {
  std::promise<std::thread::id> id;
  asio::post(ctx.executor(), [&] { id.set_value(std::this_thread::get_id()); });
  auto f = id.get_future();
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  return f.get();
}

std::chrono::steady_clock::time_point in(std::chrono::milliseconds ms) {
  return std::chrono::steady_clock::now() + ms;
}

// The parking clock of every Context while it exists (runtime/park_clock.hpp), standing still
// until advance(): a linger ends only when the test moves the clock past it. Construct it
// before the context, so that it outlives the context's parked thread.
class ManualParkClock final : public runtime::ParkClock {
 public:
  ManualParkClock() { runtime::set_park_clock(this); }
  ~ManualParkClock() override { runtime::set_park_clock(nullptr); }
  ManualParkClock(const ManualParkClock&) = delete;
  ManualParkClock& operator=(const ManualParkClock&) = delete;

  Clock::time_point now() override {
    std::lock_guard lock(mu_);
    return now_;
  }
  void wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                  Clock::time_point until) override {
    {
      std::lock_guard own(mu_);
      const Waiter w{&cv, lock.mutex()};
      if (std::find(waiters_.begin(), waiters_.end(), w) == waiters_.end()) waiters_.push_back(w);
      if (now_ >= until) return;  // moved since the caller looked: it looks again
    }
    cv.wait(lock);
  }
  // Moves the clock, then wakes every thread that ever waited on it: each under its own
  // mutex, which its parked thread holds from its look at now() until it waits.
  void advance(Clock::duration by) {
    std::vector<Waiter> waiters;
    {
      std::lock_guard lock(mu_);
      now_ += by;
      waiters = waiters_;
    }
    for (const auto& w : waiters) {
      std::lock_guard lock(*w.mutex);
      w.cv->notify_all();
    }
  }

 private:
  struct Waiter {
    std::condition_variable* cv;
    std::mutex* mutex;
    bool operator==(const Waiter&) const = default;
  };
  std::mutex mu_;
  Clock::time_point now_ = Clock::now();
  std::vector<Waiter> waiters_;
};

// A started one-thread context that threads may drive.
struct DrivableContext : runtime::Context {
  explicit DrivableContext(std::chrono::microseconds linger = {}) : Context(runtime::Config{}, 1) {
    enable_driving(linger);
    start();
  }
};

// Runs the loop on this thread until done() or 10 s have passed; whether done() holds.
template <class Done>
bool drive_until(runtime::Context::Drive& drive, Done done) {
  const auto give_up = in(10'000ms);
  while (!done() && std::chrono::steady_clock::now() < give_up) drive.run_one_until(in(100ms));
  return done();
}

}  // namespace

TEST_CASE("runtime: a Drive runs the context's handlers on the calling thread", "[runtime]") {
  DrivableContext ctx;
  const auto io_thread = runner_of(ctx);
  REQUIRE(io_thread != std::this_thread::get_id());
  {
    auto drive = ctx.try_drive();
    REQUIRE(drive);
    // Posted from elsewhere while driven: only the driving thread runs them.
    std::vector<std::thread::id> ran_on;
    std::thread poster([&] {
      for (int i = 0; i < 100; ++i)
        asio::post(ctx.executor(), [&] { ran_on.push_back(std::this_thread::get_id()); });
    });
    poster.join();
    REQUIRE(drive_until(*drive, [&] { return ran_on.size() == 100; }));
    for (const auto& id : ran_on) CHECK(id == std::this_thread::get_id());
    // Nothing to run: returns at the deadline (not before) with nothing run.
    const auto deadline = in(50ms);
    CHECK_FALSE(drive->run_one_until(deadline));
    CHECK(std::chrono::steady_clock::now() >= deadline);
  }
  // Given back: the context's own thread runs handlers again, with nobody driving.
  CHECK(runner_of(ctx) == io_thread);
  ctx.stop();
}

TEST_CASE("runtime: only one thread drives, and only a single-thread context it does not run",
          "[runtime]") {
  runtime::Context idle(runtime::Config{}, 1);
  idle.enable_driving();
  CHECK_FALSE(idle.try_drive());  // not started: nothing to take over

  runtime::Context plain(runtime::Config{}, 1);
  plain.start();
  CHECK_FALSE(plain.try_drive());  // driving not enabled: its thread runs io_context::run()
  plain.stop();

  runtime::Context two(runtime::Config{}, 2);
  two.enable_driving();
  two.start();
  CHECK_FALSE(two.try_drive());
  two.stop();

  DrivableContext ctx;
  std::promise<bool> inside;
  asio::post(ctx.executor(), [&] { inside.set_value(ctx.try_drive().has_value()); });
  auto f = inside.get_future();
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  CHECK_FALSE(f.get());  // a handler would wait for itself to park

  auto drive = ctx.try_drive();
  REQUIRE(drive);
  bool second = true;
  std::thread other([&] { second = ctx.try_drive().has_value(); });
  other.join();
  CHECK_FALSE(second);
  drive.reset();
  CHECK(ctx.try_drive());  // free again
  ctx.stop();
}

TEST_CASE("runtime: stopping a driven context ends the drive and the parked thread", "[runtime]") {
  DrivableContext ctx;
  auto drive = ctx.try_drive();
  REQUIRE(drive);
  std::thread stopper([&] { ctx.stop(); });  // joins the parked own thread
  stopper.join();
  // Stopped: returns at once. Its deadline lies past ctest's timeout, so a return before it
  // can only be the stop's doing (a drive that waited for it fails as a timeout).
  const auto deadline = in(std::chrono::hours(1));
  CHECK_FALSE(drive->run_one_until(deadline));
  CHECK(std::chrono::steady_clock::now() < deadline);
  drive.reset();
  CHECK_FALSE(ctx.try_drive());
}

TEST_CASE("runtime: a handler that throws while driven is logged, not thrown at the driver",
          "[runtime]") {
  DrivableContext ctx;
  auto drive = ctx.try_drive();
  REQUIRE(drive);
  bool after = false;
  asio::post(ctx.executor(), [] { throw std::runtime_error("a bug in a handler"); });
  asio::post(ctx.executor(), [&] { after = true; });
  CHECK_NOTHROW(drive_until(*drive, [&] { return after; }));
  CHECK(after);
  drive.reset();
  ctx.stop();
}

TEST_CASE("runtime: after a Drive the own thread lingers, and the next Drive needs no wake-up",
          "[runtime]") {
  // The clock stands still: the linger cannot end by itself.
  ManualParkClock clock;
  DrivableContext ctx(std::chrono::seconds(1));
  REQUIRE(ctx.try_drive());  // taken and given back: the own thread now lingers
  std::promise<std::thread::id> ran;
  asio::post(ctx.executor(), [&] { ran.set_value(std::this_thread::get_id()); });
  auto f = ran.get_future();
  CHECK(f.wait_for(100ms) == std::future_status::timeout);  // nobody serves the loop
  auto drive = ctx.try_drive();  // the lingering thread is not asked to park again
  REQUIRE(drive);
  // (The first Drive's nudge to park may still be queued: it runs too.)
  REQUIRE(drive_until(*drive, [&] { return f.wait_for(0s) == std::future_status::ready; }));
  CHECK(f.get() == std::this_thread::get_id());
  drive.reset();
  ctx.stop();
}

TEST_CASE("runtime: a linger ends by itself", "[runtime]") {
  ManualParkClock clock;
  DrivableContext ctx(20ms);
  const auto io_thread = runner_of(ctx);
  REQUIRE(ctx.try_drive());  // lingers until the clock has moved 20 ms
  std::promise<std::thread::id> ran;
  asio::post(ctx.executor(), [&] { ran.set_value(std::this_thread::get_id()); });
  auto f = ran.get_future();
  CHECK(f.wait_for(100ms) == std::future_status::timeout);  // the clock stands still
  clock.advance(19ms);
  CHECK(f.wait_for(100ms) == std::future_status::timeout);  // not yet
  clock.advance(1ms);  // the linger's end: the own thread resumes, with no one driving
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  CHECK(f.get() == io_thread);
  ctx.stop();
}

TEST_CASE("runtime: keep_awake ends a linger, and a Drive ending while one exists does not linger",
          "[runtime]") {
  // The clock stands still: a linger ends only by keep_awake, and a Drive that ended with
  // a linger would keep the loop unserved (runner_of and the wait below fail).
  ManualParkClock clock;
  DrivableContext ctx(std::chrono::seconds(1));
  const auto io_thread = runner_of(ctx);
  REQUIRE(ctx.try_drive());  // lingers
  {
    auto awake = ctx.keep_awake();  // a thread about to wait for the own thread's work
    CHECK(runner_of(ctx) == io_thread);
  }

  auto drive = ctx.try_drive();
  REQUIRE(drive);
  auto awake = ctx.keep_awake();  // taken while another thread drives
  std::promise<std::thread::id> ran;
  asio::post(ctx.executor(), [&] { ran.set_value(std::this_thread::get_id()); });
  drive.reset();  // no linger: the own thread resumes at once and runs the handler
  auto f = ran.get_future();
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  CHECK(f.get() == io_thread);
  ctx.stop();
}

TEST_CASE("runtime: Drives that run nothing cannot keep the loop unserved", "[runtime]") {
  // A thread polling wait_for(0) takes and gives back the loop in a row: lingers in a row
  // end 10 ms after the own thread parked, so what is posted meanwhile still runs.
  DrivableContext ctx(std::chrono::seconds(1));
  const auto io_thread = runner_of(ctx);
  REQUIRE(ctx.try_drive());
  std::promise<std::thread::id> ran;
  asio::post(ctx.executor(), [&] { ran.set_value(std::this_thread::get_id()); });
  auto f = ran.get_future();
  const auto give_up = in(5'000ms);
  while (f.wait_for(0s) != std::future_status::ready && std::chrono::steady_clock::now() < give_up) {
    auto drive = ctx.try_drive(in(1ms));  // taken and given back, running nothing
  }
  REQUIRE(f.wait_for(0s) == std::future_status::ready);
  CHECK(f.get() == io_thread);
  ctx.stop();
}

TEST_CASE("runtime: a Drive kept across stop() and start() still has the loop alone", "[runtime]") {
  DrivableContext ctx;
  auto drive = ctx.try_drive();
  REQUIRE(drive);
  ctx.stop();
  ctx.start();  // the new own thread must park: the Drive is still held
  std::vector<std::thread::id> ran_on;
  for (int i = 0; i < 200; ++i)
    asio::post(ctx.executor(), [&] { ran_on.push_back(std::this_thread::get_id()); });
  REQUIRE(drive_until(*drive, [&] { return ran_on.size() == 200; }));
  for (const auto& id : ran_on) CHECK(id == std::this_thread::get_id());
  drive.reset();
  CHECK(runner_of(ctx) != std::this_thread::get_id());  // the new own thread again
  ctx.stop();
}
