#include <taskwire/runtime/function_registry.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>

using namespace taskwire::runtime;

namespace demo {
int add(int a, int b) { return a + b; }
std::string shout(const std::string& s) { return s + "!"; }
double total(std::vector<double> v) { return std::accumulate(v.begin(), v.end(), 0.0); }
int fails(int) { throw std::runtime_error("deliberate failure"); }

// Counts its copies: a decoded argument must be moved into a by-value parameter.
int copies = 0;
struct Counted {
  std::vector<int> data;
  Counted() = default;
  Counted(const Counted& o) : data(o.data) { ++copies; }
  Counted(Counted&&) noexcept = default;
  Counted& operator=(const Counted& o) {
    data = o.data;
    ++copies;
    return *this;
  }
  Counted& operator=(Counted&&) noexcept = default;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & data;
  }
};
std::size_t by_value(Counted a, Counted b) { return a.data.size() + b.data.size(); }
std::size_t by_ref(const Counted& a) { return a.data.size(); }
std::size_t all_sizes(std::vector<Counted> v) {
  std::size_t n = 0;
  for (const auto& c : v) n += c.data.size();
  return n;
}
}  // namespace demo

TASKWIRE_REGISTER(demo::add);
TASKWIRE_REGISTER(demo::shout);
TASKWIRE_REGISTER(demo::total);
TASKWIRE_REGISTER(demo::fails);
TASKWIRE_REGISTER(demo::by_value);
TASKWIRE_REGISTER(demo::by_ref);
TASKWIRE_REGISTER(demo::all_sizes);

TEST_CASE("registry: registered functions run by name on serialized arguments", "[runtime]") {
  auto& reg = FunctionRegistry::global();
  CHECK(reg.name_of(reinterpret_cast<const void*>(&demo::add)) == "demo::add");
  auto* add = reg.find("demo::add");
  REQUIRE(add);
  CHECK(add->arity == 2);
  CHECK(from_frame<int>(add->invoke({to_frame(2), to_frame(40)}).bytes()) == 42);
  CHECK(from_frame<std::string>(
            reg.find("demo::shout")->invoke({to_frame(std::string("hi"))}).bytes()) == "hi!");
  std::vector<double> v{1.5, 2.5};
  CHECK(from_frame<double>(reg.find("demo::total")->invoke({to_frame(v)}).bytes()) == 4.0);
}

TEST_CASE("registry: decoded arguments are moved into by-value parameters, never copied", "[runtime]") {
  auto& reg = FunctionRegistry::global();
  demo::Counted c;
  c.data.assign(1000, 7);
  const auto frame = to_frame(c);
  demo::copies = 0;
  CHECK(from_frame<std::size_t>(reg.find("demo::by_value")->invoke({frame, frame}).bytes()) ==
        2000);
  CHECK(from_frame<std::size_t>(reg.find("demo::by_ref")->invoke({frame}).bytes()) == 1000);
  // Over a chunk (invoke_each) and over gathered results (invoke_gathered) too.
  const auto chunk = to_frame(std::vector<demo::Counted>{c, c});
  demo::copies = 0;
  std::size_t at = 0;
  CHECK(from_frame<std::vector<std::size_t>>(reg.find("demo::by_ref")->invoke_each(chunk, at)) ==
        std::vector<std::size_t>{1000, 1000});
  CHECK(from_frame<std::size_t>(
            reg.find("demo::all_sizes")->invoke_gathered({frame, chunk}, {0, 1}, {})) == 3000);
  CHECK(demo::copies == 0);
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

TEST_CASE("registry: a function with a std::vector parameter has a list form, filled element by "
          "element",
          "[runtime]") {
  auto& reg = FunctionRegistry::global();
  CHECK(reg.find(list_form_name("demo::add")) == nullptr);  // no std::vector parameter
  const auto names = reg.names();
  CHECK(std::find(names.begin(), names.end(), list_form_name("demo::total")) == names.end());
  const auto* total = reg.find(list_form_name("demo::total"));
  REQUIRE(total);
  using Layout = std::vector<std::int64_t>;
  CHECK(from_frame<double>(total->invoke({to_frame(Layout{2}), to_frame(1.5), to_frame(2.5)})
                               .bytes()) == 4.0);
  CHECK(from_frame<double>(total->invoke({to_frame(Layout{0})}).bytes()) == 0.0);
  // The whole vector as one argument, as the plain form takes it.
  CHECK(from_frame<double>(
            total->invoke({to_frame(Layout{kOneArgument}), to_frame(std::vector<double>{1, 2})})
                .bytes()) == 3.0);
  CHECK_THROWS_AS(total->invoke({to_frame(Layout{3}), to_frame(1.5)}), std::invalid_argument);
  CHECK_THROWS_AS(total->invoke({to_frame(Layout{1, 1}), to_frame(1.5), to_frame(1.5)}),
                  std::invalid_argument);
  CHECK_THROWS_WITH(total->invoke({to_frame(Layout{1}), Frame(std::string_view("xx"))}),
                    Catch::Contains("argument 0"));
}
