// The registry's batch invokers that graph tasks run through (no cluster): invoke_each over a
// chunk, invoke_gathered over parts that are single results or batches.
#include <taskwire/runtime/function_registry.hpp>

#include <boost/serialization/string.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>

namespace batch_fns {
int twice_unless_7(int x) {
  if (x == 7) throw std::runtime_error("seven");
  return 2 * x;
}
std::string join(std::vector<std::string> parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}
int two_params(int a, int b) { return a + b; }
}  // namespace batch_fns

TASKWIRE_REGISTER(batch_fns::twice_unless_7);
TASKWIRE_REGISTER(batch_fns::join);
TASKWIRE_REGISTER(batch_fns::two_params);

using taskwire::runtime::FunctionRegistry;
using taskwire::runtime::from_frame;
using taskwire::runtime::to_frame;

TEST_CASE("registry: invoke_each runs a function over a batch and says which input threw",
          "[graph][registry]") {
  const auto* fn = FunctionRegistry::global().find("batch_fns::twice_unless_7");
  REQUIRE(fn);
  REQUIRE(fn->invoke_each);
  std::size_t at = 99;
  auto out = fn->invoke_each(to_frame(std::vector<int>{1, 2, 3}), at);
  CHECK(from_frame<std::vector<int>>(out) == std::vector<int>{2, 4, 6});
  CHECK_THROWS_WITH(fn->invoke_each(to_frame(std::vector<int>{5, 6, 7, 8}), at), "seven");
  CHECK(at == 2);
  CHECK_THROWS_AS(fn->invoke_each(to_frame(std::string("not a vector of int")), at),
                  std::invalid_argument);
  CHECK_FALSE(FunctionRegistry::global().find("batch_fns::two_params")->invoke_each);
}

TEST_CASE("registry: invoke_gathered splices single results and batches, then the parameters",
          "[graph][registry]") {
  const auto* fn = FunctionRegistry::global().find("batch_fns::join");
  REQUIRE(fn);
  REQUIRE(fn->invoke_gathered);
  const std::vector<taskwire::runtime::Frame> parts{
      to_frame(std::string("a")), to_frame(std::vector<std::string>{"b", "c"}),
      to_frame(std::string("d"))};
  auto out = fn->invoke_gathered(parts, {0, 1, 0}, {to_frame(std::string("-"))});
  CHECK(from_frame<std::string>(out) == "a-b-c-d");
  CHECK_THROWS_AS(fn->invoke_gathered(parts, {0, 1}, {to_frame(std::string("-"))}),
                  std::invalid_argument);  // one flag per part
  CHECK_THROWS_AS(fn->invoke_gathered(parts, {0, 1, 0}, {}), std::invalid_argument);
  CHECK_THROWS_WITH(fn->invoke_gathered(parts, {1, 1, 0}, {to_frame(std::string("-"))}),
                    Catch::Contains("part 0"));
  CHECK_FALSE(FunctionRegistry::global().find("batch_fns::twice_unless_7")->invoke_gathered);
}
