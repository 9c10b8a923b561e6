#include <taskwire/runtime/function_registry.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <catch2/catch.hpp>

#include <numeric>

using namespace taskwire::runtime;

namespace demo {
int add(int a, int b) { return a + b; }
std::string shout(const std::string& s) { return s + "!"; }
double total(std::vector<double> v) { return std::accumulate(v.begin(), v.end(), 0.0); }
int fails(int) { throw std::runtime_error("deliberate failure"); }
}  // namespace demo

TASKWIRE_REGISTER(demo::add);
TASKWIRE_REGISTER(demo::shout);
TASKWIRE_REGISTER(demo::total);
TASKWIRE_REGISTER(demo::fails);

TEST_CASE("registry: registered functions run by name on serialized arguments", "[runtime]") {
  auto& reg = FunctionRegistry::global();
  CHECK(reg.name_of(reinterpret_cast<const void*>(&demo::add)) == "demo::add");
  auto* add = reg.find("demo::add");
  REQUIRE(add);
  CHECK(add->arity == 2);
  CHECK(from_frame<int>(add->invoke({to_frame(2), to_frame(40)})) == 42);
  CHECK(from_frame<std::string>(reg.find("demo::shout")->invoke({to_frame(std::string("hi"))})) == "hi!");
  std::vector<double> v{1.5, 2.5};
  CHECK(from_frame<double>(reg.find("demo::total")->invoke({to_frame(v)})) == 4.0);
}

TEST_CASE("registry: wrong arity, bad arguments and unknown names are clear errors", "[runtime]") {
  auto& reg = FunctionRegistry::global();
  CHECK(reg.find("no::such_function") == nullptr);
  CHECK_THROWS_WITH(reg.find("demo::add")->invoke({to_frame(1)}), Catch::Contains("expects 2"));
  CHECK_THROWS_WITH(reg.find("demo::total")->invoke({Frame(std::string_view("xx"))}),
                    Catch::Contains("argument 0"));
  CHECK_THROWS_WITH(reg.find("demo::fails")->invoke({to_frame(1)}), "deliberate failure");
  int (*unregistered)(int, int) = [](int a, int) { return a; };
  CHECK_THROWS_WITH(reg.name_of(reinterpret_cast<const void*>(unregistered)),
                    Catch::Contains("TASKWIRE_REGISTER"));
}
