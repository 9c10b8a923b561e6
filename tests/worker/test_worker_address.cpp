// Which address a worker listens on and advertises (WorkerOptions::listen_address, host,
// interface), and the helpers behind them (comm/core/host_address.hpp).
#include "tests/worker/fake_scheduler.hpp"

#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/error.hpp>
#include <taskwire/comm/core/host_address.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <stdexcept>

using namespace taskwire;
using namespace taskwire::worker;
using namespace taskwire::worker::testing;
using Catch::Contains;

namespace {

// A fake scheduler on tcp://127.0.0.1 and one worker started with `o`: its advertised
// address, also checked against what it registered with.
std::string advertised(WorkerOptions o, const std::string& scheduler_at = "tcp://127.0.0.1:0") {
  runtime::Context ctx(runtime::Config::from_env(), 2);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  std::string address;
  {
    FakeScheduler scheduler(registry, scheduler_at);
    o.scheduler_address = scheduler.address();
    Worker w(ctx, registry, o);
    w.start();
    auto reg = scheduler.accept()->next(Op::register_worker);
    REQUIRE(reg);
    CHECK(reg->registered.address == w.address());
    address = w.address();
    w.stop();
  }
  ctx.stop();
  return address;
}

std::string host_of(const std::string& address) {
  return comm::HostPort::parse(comm::Address::parse(address).location).host;
}

}  // namespace

TEST_CASE("host address: wildcards, interface addresses, replacing the host",
          "[worker][address]") {
  CHECK(comm::is_wildcard_host("0.0.0.0"));
  CHECK(comm::is_wildcard_host("::"));
  CHECK(comm::is_wildcard_host("0:0::0"));
  CHECK_FALSE(comm::is_wildcard_host("127.0.0.1"));
  CHECK_FALSE(comm::is_wildcard_host("::1"));
  CHECK_FALSE(comm::is_wildcard_host("h1"));
  CHECK(comm::interface_address("lo") == "127.0.0.1");
  CHECK_THROWS_WITH(comm::interface_address("no-such-if0"),
                    Contains("no-such-if0") && Contains("lo"));
  CHECK(comm::with_host("tcp://0.0.0.0:8786", "10.1.2.3") == "tcp://10.1.2.3:8786");
  CHECK(comm::with_host("tls://[::]:9000", "fe80::1") == "tls://[fe80::1]:9000");
  CHECK(comm::with_host("tcp://0.0.0.0:1", "h2") == "tcp://h2:1");
}

TEST_CASE("worker address: by default it listens and advertises where it reaches the scheduler",
          "[worker][address]") {
  const auto address = advertised({});
  CHECK(host_of(address) == "127.0.0.1");
  CHECK(comm::HostPort::parse(comm::Address::parse(address).location).port != 0);
}

TEST_CASE("worker address: bound to every interface, it advertises the address that reaches "
          "the scheduler, not one guessed from the host name",
          "[worker][address]") {
  WorkerOptions o;
  o.listen_address = "tcp://0.0.0.0:0";
  // The listener alone guesses from the host name, which may give another address.
  CHECK(host_of(advertised(o)) == "127.0.0.1");
}

TEST_CASE("worker address: --host and --interface say what it advertises and where it listens",
          "[worker][address]") {
  WorkerOptions o;
  SECTION("host alone: listens and advertises there") {
    o.host = "127.0.0.2";
    CHECK(host_of(advertised(o)) == "127.0.0.2");
  }
  SECTION("host with a wildcard listen address: advertised with the bound port") {
    o.host = "127.0.0.4";
    o.listen_address = "tcp://0.0.0.0:0";
    const auto address = advertised(o);
    CHECK(host_of(address) == "127.0.0.4");
    CHECK(comm::HostPort::parse(comm::Address::parse(address).location).port != 0);
  }
  SECTION("interface: its address") {
    o.interface = "lo";
    CHECK(host_of(advertised(o)) == "127.0.0.1");
  }
}

TEST_CASE("worker address: a host and an interface at once, or a host on inproc://, are errors",
          "[worker][address]") {
  WorkerOptions o;
  SECTION("both") {
    o.host = "127.0.0.1";
    o.interface = "lo";
    CHECK_THROWS_WITH(advertised(o), Contains("not both"));
  }
  SECTION("inproc") {
    o.host = "127.0.0.1";
    CHECK_THROWS_WITH(advertised(o, "inproc://auto"), Contains("tcp:// and tls://"));
  }
  SECTION("an interface that does not exist") {
    o.interface = "no-such-if0";
    CHECK_THROWS_AS(advertised(o), comm::CommError);
  }
}
