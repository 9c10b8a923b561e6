#include <taskwire/runtime/config.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/runtime/launch_env.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <catch2/catch.hpp>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>

using namespace taskwire;

namespace {
struct Point {
  int x = 0;
  std::string label;
  std::vector<double> values;
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    ar & x & label & values;
  }
};
}  // namespace

TEST_CASE("runtime: values round-trip through frames", "[runtime]") {
  Point p{7, "seven", {1.5, 2.5}};
  auto f = runtime::to_frame(p, std::string("tail"));
  Point q;
  std::string tail;
  runtime::from_frame(f, q, tail);
  CHECK(q.x == 7);
  CHECK(q.label == "seven");
  CHECK(q.values == std::vector<double>{1.5, 2.5});
  CHECK(tail == "tail");
}

TEST_CASE("runtime: a truncated frame is a SerializationError, not a crash", "[runtime]") {
  auto f = runtime::to_frame(std::string(1000, 'x'));
  auto cut = runtime::Frame::copy_of(f.data(), f.size() / 2);
  std::string s;
  CHECK_THROWS_AS(runtime::from_frame(cut, s), runtime::SerializationError);
}

TEST_CASE("runtime: Frame copies share bytes, never copy them", "[runtime]") {
  runtime::Frame a(std::string_view("hello"));
  runtime::Frame b = a;
  CHECK(a.data() == b.data());
  CHECK(b.view() == "hello");
  runtime::Message m({a, b});
  CHECK(m.total_bytes() == 10);
}

TEST_CASE("runtime: Config::from_env overlays TASKWIRE_* variables and rejects junk", "[runtime]") {
  ::setenv("TASKWIRE_MPI_YIELD_US", "7", 1);
  ::setenv("TASKWIRE_MAX_QUEUED_BYTES", "250", 1);
  auto c = runtime::Config::from_env();
  CHECK(c.mpi.yield_after_progress == std::chrono::microseconds(7));
  CHECK(c.limits.max_queued_bytes == 250);
  ::setenv("TASKWIRE_MPI_YIELD_US", "lots", 1);
  CHECK_THROWS_WITH(runtime::Config::from_env(), Catch::Contains("TASKWIRE_MPI_YIELD_US"));
  ::unsetenv("TASKWIRE_MPI_YIELD_US");
  ::unsetenv("TASKWIRE_MAX_QUEUED_BYTES");
}

TEST_CASE("runtime: Context runs handlers on its threads and stops cleanly", "[runtime]") {
  runtime::Context ctx(runtime::Config{}, 2);
  ctx.start();
  std::promise<bool> on_thread;
  asio::post(ctx.executor(), [&] { on_thread.set_value(ctx.running_in_this_thread()); });
  auto fut = on_thread.get_future();
  REQUIRE(fut.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(fut.get());
  CHECK_FALSE(ctx.running_in_this_thread());
  ctx.stop();
  ctx.stop();  // idempotent
}

TEST_CASE("runtime: post_urgent counts its handlers until they run or are dropped", "[runtime]") {
  asio::io_context io;
  auto& work = runtime::UrgentWork::of(io);
  auto strand = asio::make_strand(io.get_executor());
  int ran = 0;
  runtime::post_urgent(io.get_executor(), [&] { ++ran; });
  runtime::post_urgent(strand, [&] { ++ran; });  // counted on the strand's io_context
  CHECK(work.pending() == 2);
  asio::io_context other;
  CHECK(runtime::UrgentWork::of(other).pending() == 0);  // one count per execution context
  io.run();
  CHECK(ran == 2);
  CHECK(work.pending() == 0);
  {
    runtime::UrgentWork::Token a(work);
    runtime::UrgentWork::Token b(std::move(a));  // a moved-from token counts nothing
    CHECK(work.pending() == 1);
  }
  CHECK(work.pending() == 0);  // destroyed unrun: no longer pending
}

TEST_CASE("runtime: a long handler sees urgent work posted for its io thread", "[runtime]") {
  // What the MPI poll driver relies on to end a burst early (mpi_poll_driver.cpp).
  runtime::Context ctx(runtime::Config{}, 1);
  ctx.start();
  auto& work = runtime::UrgentWork::of(ctx.io());
  std::promise<void> looping;
  std::promise<bool> saw;
  asio::post(ctx.executor(), [&] {
    looping.set_value();
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (work.pending() == 0 && std::chrono::steady_clock::now() < give_up) {
    }
    saw.set_value(work.pending() > 0);
  });
  looping.get_future().wait();
  std::promise<void> ran;
  runtime::post_urgent(ctx.executor(), [&] { ran.set_value(); });
  auto seen = saw.get_future();
  REQUIRE(seen.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK(seen.get());
  CHECK(ran.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(work.pending() == 0);
  ctx.stop();
}

TEST_CASE("runtime: a log file name may carry the rank", "[runtime]") {
  auto dir = std::filesystem::temp_directory_path() / ("taskwire-log-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  runtime::LogOptions o;
  o.level = "info";
  o.file = (dir / "rank{rank}.log").string();
  o.rank = 3;
  runtime::init_logging(o);
  spdlog::info("hello from the test");
  spdlog::default_logger()->flush();
  std::ifstream in(dir / "rank3.log");
  std::string all((std::istreambuf_iterator<char>(in)), {});
  CHECK(all.find("hello from the test") != std::string::npos);
  CHECK(all.find("[rank 3]") != std::string::npos);
  runtime::init_logging({});  // back to stderr only
  std::filesystem::remove_all(dir);
  CHECK_THROWS_WITH(runtime::init_logging({"loud", "", -1}), Catch::Contains("unknown log level"));
}

TEST_CASE("runtime: a process no launcher started logs without a rank", "[runtime]") {
  // As a daemon started by hand; inside a launch (a CI job under Slurm) there is a rank.
  if (runtime::launch_position().launched) {
    WARN("run inside a launch: nothing to check");
    return;
  }
  auto dir = std::filesystem::temp_directory_path() / ("taskwire-log-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  runtime::LogOptions o;
  o.level = "info";
  o.file = (dir / "daemon.log").string();
  runtime::init_logging(o);
  spdlog::info("a daemon's line");
  spdlog::default_logger()->flush();
  std::ifstream in(dir / "daemon.log");
  std::string all((std::istreambuf_iterator<char>(in)), {});
  runtime::init_logging({});  // back to stderr only
  std::filesystem::remove_all(dir);
  CHECK(all.find("a daemon's line") != std::string::npos);
  CHECK(all.find("[rank") == std::string::npos);
  CHECK(runtime::log_pattern(-1).find("rank") == std::string::npos);
  CHECK(runtime::log_pattern(2).find("[rank 2]") != std::string::npos);
}
