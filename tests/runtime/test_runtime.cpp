#include <taskwire/runtime/config.hpp>
#include <taskwire/runtime/context.hpp>
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
  ::setenv("TASKWIRE_MPI_SPIN_POLLS", "7", 1);
  ::setenv("TASKWIRE_MPI_SLEEP_CAP_US", "250", 1);
  auto c = runtime::Config::from_env();
  CHECK(c.mpi.spin_polls == 7);
  CHECK(c.mpi.sleep_cap == std::chrono::microseconds(250));
  ::setenv("TASKWIRE_MPI_SPIN_POLLS", "lots", 1);
  CHECK_THROWS_WITH(runtime::Config::from_env(), Catch::Contains("TASKWIRE_MPI_SPIN_POLLS"));
  ::unsetenv("TASKWIRE_MPI_SPIN_POLLS");
  ::unsetenv("TASKWIRE_MPI_SLEEP_CAP_US");
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
