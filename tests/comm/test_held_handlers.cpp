// A context that shuts down destroys the handlers its comms hold (held_handlers.hpp), as
// asio destroys its pending operations. The test builds the cycle a server's read loop makes
// (owner -> comm -> pending read's handler -> owner) on both ends of a connection, never
// closes them, and stops the context: without the drop both owners would outlive it.
#include "tests/comm/fixture.hpp"

#include <taskwire/comm/core/connect.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <memory>

using namespace taskwire;
using namespace std::chrono_literals;

namespace {

struct Owner {  // what a server keeps per peer
  comm::CommPtr comm;
};

// owner -> comm -> handler -> owner; returns the owner's weak reference.
std::weak_ptr<Owner> read_in_a_cycle(comm::CommPtr c) {
  auto owner = std::make_shared<Owner>();
  owner->comm = std::move(c);
  owner->comm->async_read([owner](taskwire::error_code, comm::Message) {});
  return owner;
}

}  // namespace

TEST_CASE("held handlers: a context's shutdown frees what its comms' pending reads hold",
          "[comm]") {
  const auto scheme = test::selected_scheme();
  std::unique_ptr<runtime::Context> ctx;
  std::unique_ptr<comm::Registry> reg;
  test::make_runtime(ctx, reg, "test", scheme == "tls");
  auto accepted = std::make_shared<std::promise<std::weak_ptr<Owner>>>();
  auto server_side = accepted->get_future();
  auto listener = comm::listen(*reg, scheme == "inproc" ? "inproc://auto" : scheme + "://127.0.0.1:0",
                               [accepted](comm::CommPtr c) { accepted->set_value(read_in_a_cycle(std::move(c))); });
  auto client_side = read_in_a_cycle(comm::connect(*reg, listener->contact_address(), 30s));
  REQUIRE(server_side.wait_for(30s) == std::future_status::ready);
  const auto server_owner = server_side.get();
  CHECK_FALSE(server_owner.expired());  // the cycles hold while the context runs
  CHECK_FALSE(client_side.expired());
  listener.reset();
  reg.reset();
  ctx.reset();  // stops its threads, then shuts its io_context down
  CHECK(server_owner.expired());
  CHECK(client_side.expired());
}
