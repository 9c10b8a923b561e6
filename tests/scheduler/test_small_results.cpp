// SmallResults: the small results the scheduler keeps for the consumers it places next.
#include <taskwire/scheduler/small_results.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>

using taskwire::runtime::Frame;
using taskwire::scheduler::SmallResults;

TEST_CASE("small results: given for the attempt that produced them only, and forgotten",
          "[scheduler]") {
  SmallResults r(1 << 20);
  r.keep("a", 3, Frame(std::string_view("bytes of a")));
  REQUIRE(r.find("a", 3));
  CHECK(r.find("a", 3)->view() == "bytes of a");
  CHECK_FALSE(r.find("a", 4));  // run again: the old value is not the current one
  CHECK_FALSE(r.find("b", 3));
  r.keep("a", 4, Frame(std::string_view("new a")));
  CHECK_FALSE(r.find("a", 3));
  CHECK(r.find("a", 4)->view() == "new a");
  r.forget("a");
  CHECK_FALSE(r.find("a", 4));
  CHECK(r.bytes() == 0);
}

TEST_CASE("small results: the oldest go once the budget is spent, none are kept with no budget",
          "[scheduler]") {
  SmallResults r(2000);
  const std::string value(300, 'v');
  for (int i = 0; i < 100; ++i) r.keep(fmt::format("k{}", i), 1, Frame(std::string_view(value)));
  CHECK(r.bytes() <= 2000);
  CHECK(r.find("k99", 1));
  CHECK_FALSE(r.find("k0", 1));
  // Keeping a key again and forgetting others leaves the accounting right.
  for (int i = 0; i < 1000; ++i) {
    r.keep("k99", 1, Frame(std::string_view(value)));
    r.forget("k98");
  }
  CHECK(r.find("k99", 1));
  CHECK(r.bytes() <= 2000);

  SmallResults off(0);
  off.keep("a", 1, Frame(std::string_view("x")));
  CHECK_FALSE(off.find("a", 1));
}
