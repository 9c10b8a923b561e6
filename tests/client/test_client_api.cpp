// The client API a program sees: canonical registered names, scatter vs scatter_each,
// ClientOptions' timeouts, and the compile-time judgement of what can be sent. Scheduler and
// workers run in this process, on the scheme given with --scheme.
#include "tests/comm/fixture.hpp"

#include <taskwire/client/client.hpp>
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/error.hpp>
#include <taskwire/comm/core/handshake.hpp>
#include <taskwire/runtime/serialize_std.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <boost/serialization/map.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <numeric>
#include <unordered_map>

using namespace taskwire;
using namespace std::chrono_literals;

namespace api_fns {
int twice(int x) { return 2 * x; }
double total(std::vector<double> xs) { return std::accumulate(xs.begin(), xs.end(), 0.0); }
std::size_t cells(std::vector<std::vector<int>> rows) {
  std::size_t n = 0;
  for (const auto& r : rows) n += r.size();
  return n;
}
struct Shape {
  static int sides(int corners) { return corners; }
};
// Registered from inside the namespace, unqualified: the name must still be api_fns::twice.
TASKWIRE_REGISTER(twice);
}  // namespace api_fns

TASKWIRE_REGISTER(api_fns::total);
TASKWIRE_REGISTER(api_fns::cells);
TASKWIRE_REGISTER(api_fns::Shape::sides);

namespace {

struct Cluster {
  test::SchemeFixture& fx = test::fixture();
  std::unique_ptr<scheduler::SchedulerServer> scheduler;
  std::unique_ptr<worker::Worker> worker;
  std::string address;

  Cluster() {
    scheduler::SchedulerServerOptions options;
    options.listen = {fx.listen_address()};
    scheduler = std::make_unique<scheduler::SchedulerServer>(fx.registry(), options);
    scheduler->start();
    address = scheduler->addresses().at(0);
    worker::WorkerOptions o;
    o.scheduler_address = address;
    o.name = "w0";
    worker = std::make_unique<worker::Worker>(fx.context(), fx.registry(), o);
    worker->start();
  }
  ~Cluster() {
    worker->stop();
    scheduler->stop();
  }
};

std::string registered_name(const void* fn) { return runtime::FunctionRegistry::global().name_of(fn); }

}  // namespace

TEST_CASE("registry: a function gets its fully qualified name however the macro spells it",
          "[client]") {
  CHECK(registered_name(reinterpret_cast<const void*>(&api_fns::twice)) == "api_fns::twice");
  CHECK(registered_name(reinterpret_cast<const void*>(&api_fns::total)) == "api_fns::total");
  CHECK(registered_name(reinterpret_cast<const void*>(&api_fns::Shape::sides)) == "api_fns::Shape::sides");
  CHECK(runtime::FunctionRegistry::global().find("twice") == nullptr);
  CHECK(runtime::FunctionRegistry::global().find("api_fns::twice") != nullptr);
}

TEST_CASE("registry: names read from GCC's and Clang's spelling agree", "[client]") {
  using runtime::detail::canonical_function_name;
  CHECK(canonical_function_name("std::string f() [with auto F = ns::g; std::string = x]") == "ns::g");
  CHECK(canonical_function_name("std::string f() [F = &ns::g]") == "ns::g");
  CHECK(canonical_function_name("std::string f() [F = &ns::(anonymous namespace)::g]") == "ns::g");
  CHECK(canonical_function_name("std::string f() [with auto F = {anonymous}::ns::g; x]") == "ns::g");
  CHECK_THROWS_WITH(canonical_function_name("no template argument here"),
                    Catch::Contains("cannot read the function's name"));
}

TEST_CASE("client: scatter gives one future for any value, scatter_each one per element",
          "[client]") {
  Cluster cl;
  Client client(cl.fx.registry(), cl.address);
  auto whole = client.scatter(std::vector<double>{1.5, 2.5, 3.0});  // Future<std::vector<double>>
  CHECK(client.submit(api_fns::total, whole).get() == 7.0);
  auto grid = client.scatter(std::vector<std::vector<int>>{{1, 2}, {3}, {}});
  CHECK(client.submit(api_fns::cells, grid).get() == 3);
  CHECK(grid.get() == std::vector<std::vector<int>>{{1, 2}, {3}, {}});
  auto each = client.scatter_each(std::vector<int>{4, 5, 6, 7});
  REQUIRE(each.size() == 4);
  CHECK(client.submit(api_fns::twice, each[3]).get() == 14);
  CHECK(client.gather(each) == std::vector<int>{4, 5, 6, 7});
  CHECK(client.scatter_each(std::vector<int>{}).empty());
  using Keyed = std::map<std::string, std::tuple<int, std::optional<double>>>;
  Keyed keyed{{"a", {1, 2.0}}, {"b", {2, std::nullopt}}};
  CHECK(client.scatter(keyed).get() == keyed);
}

TEST_CASE("client: connect_timeout ends a connect to where nobody listens, saying so",
          "[client]") {
  auto& fx = test::fixture();
  const auto nowhere = fx.unreachable_address();
  ClientOptions options;
  options.connect_timeout = 300ms;
  const auto matcher = Catch::Contains(nowhere);  // the error says where it tried
  CHECK_THROWS_AS(Client(nowhere, options), comm::CommError);
  CHECK_THROWS_WITH(Client(nowhere, options), matcher);
  CHECK_THROWS_WITH(Client(fx.registry(), nowhere, options), matcher);
}

TEST_CASE("client: from_scheduler_file waits connect_timeout for the file, then names it",
          "[client]") {
  ClientOptions options;
  options.connect_timeout = 300ms;
  const std::string path = "/nonexistent-taskwire-dir/sched.json";
  CHECK_THROWS_WITH(Client::from_scheduler_file(path, options),
                    Catch::Contains(path) && Catch::Contains("is a scheduler started"));
}

TEST_CASE("client: a scheduler of the protocol before scheduler_info refuses the client, saying why",
          "[client][info]") {
  auto config = runtime::Config::from_env();
  config.protocol_version_override = comm::kProtocolVersion - 1;  // as an older build
  runtime::Context old_context(config, 1);
  comm::Registry old_registry(old_context);
  comm::register_builtin_backends(old_registry);
  old_context.start();
  scheduler::SchedulerServerOptions options;
  options.listen = {"tcp://127.0.0.1:0"};
  auto old_scheduler = std::make_unique<scheduler::SchedulerServer>(old_registry, options);
  old_scheduler->start();
  ClientOptions client_options;
  client_options.connect_timeout = 5s;
  CHECK_THROWS_WITH(Client(old_scheduler->addresses().at(0), client_options),
                    Catch::Contains("protocol version mismatch"));
  old_scheduler.reset();  // while its context runs
  old_context.stop();
}

TEST_CASE("client: ClientOptions' defaults bound connect and fetch separately", "[client]") {
  ClientOptions options;
  CHECK(options.connect_timeout == 10s);
  CHECK(options.fetch_timeout == 10s);
}

namespace api_types {
struct Member {
  int x = 0;
  template <class Archive>
  void serialize(Archive& ar, unsigned) { ar & x; }
};
class Private {
  friend class boost::serialization::access;
  int x = 0;
  template <class Archive>
  void serialize(Archive& ar, unsigned) { ar & x; }
};
struct Free {
  int x = 0;
};
template <class Archive>
void serialize(Archive& ar, Free& f, unsigned) { ar & f.x; }
struct Plain {
  int x = 0;
};
}  // namespace api_types

TEST_CASE("sendable: what can be sent is told at compile time", "[client]") {
  using runtime::is_sendable_v;
  STATIC_REQUIRE(is_sendable_v<int>);
  STATIC_REQUIRE(is_sendable_v<std::string>);
  STATIC_REQUIRE(is_sendable_v<std::vector<std::vector<double>>>);
  STATIC_REQUIRE(is_sendable_v<api_types::Member>);
  STATIC_REQUIRE(is_sendable_v<api_types::Private>);
  STATIC_REQUIRE(is_sendable_v<api_types::Free>);
  STATIC_REQUIRE(is_sendable_v<std::map<std::string, api_types::Member>>);
  STATIC_REQUIRE(is_sendable_v<std::tuple<int, std::variant<int, std::string>, std::optional<int>>>);
  STATIC_REQUIRE_FALSE(is_sendable_v<api_types::Plain>);
  STATIC_REQUIRE_FALSE(is_sendable_v<std::vector<api_types::Plain>>);
  STATIC_REQUIRE_FALSE(is_sendable_v<int*>);
  // Without <boost/serialization/unordered_map.hpp> (not included here).
  STATIC_REQUIRE_FALSE(is_sendable_v<std::unordered_map<int, int>>);
  STATIC_REQUIRE(std::is_same_v<runtime::unsendable_part_t<std::map<int, std::vector<api_types::Plain>>>,
                                api_types::Plain>);
}
