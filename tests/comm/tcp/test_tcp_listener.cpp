// Listener and connector: addresses (port 0, wildcard, host names), errors, stop().
#include "tcp_test_util.hpp"

namespace taskwire::test {
namespace {

std::unique_ptr<comm::Listener> listen_collecting(Env& env, const std::string& address,
                                                  std::shared_ptr<WaitQueue<CommPtr>> into) {
  return comm::listen(env.registry, address, [into](CommPtr c) { into->push(std::move(c)); });
}

void round_trip(const CommPtr& client, const CommPtr& server) {
  REQUIRE(write_within(client, make_message({"ping"})) == error_code{});
  auto got = read_within(server);
  REQUIRE_FALSE(got.ec);
  REQUIRE(write_within(server, make_message({"pong"})) == error_code{});
  auto back = read_within(client);
  REQUIRE_FALSE(back.ec);
  CHECK(text(back.message.frames.at(0)) == "pong");
}

error_code raw_connect_error(Env& env, const std::string& address) {
  auto done = std::make_shared<std::promise<error_code>>();
  auto fut = done->get_future();
  auto connector = env.registry.get("tcp").make_connector();
  connector->async_connect(comm::Address::parse(address),
                           [done](error_code ec, CommPtr c) {
                             if (c) c->abort();
                             done->set_value(ec);
                           });
  REQUIRE(fut.wait_for(kWait) == std::future_status::ready);
  return fut.get();
}

}  // namespace

TEST_CASE("tcp: port 0 is resolved in both the listen and the contact address") {
  Env env;
  auto accepted = std::make_shared<WaitQueue<CommPtr>>();
  auto listener = listen_collecting(env, "tcp://127.0.0.1:0", accepted);
  const auto listen = listener->listen_address();
  CHECK(listen.rfind("tcp://127.0.0.1:", 0) == 0);
  CHECK(port_of(listen) != 0);
  CHECK(listener->contact_address() == listen);

  auto client = comm::connect(env.registry, listener->contact_address(), 5000ms);
  auto server = accepted->pop();
  CHECK(client->peer_address() == listen);
  CHECK(server->peer_address() == client->local_address());
  CHECK(client->peer().role == env.ctx.config().role);
  round_trip(client, server);
}

TEST_CASE("tcp: a wildcard listener reports 0.0.0.0 and a concrete contact address") {
  Env env;
  auto accepted = std::make_shared<WaitQueue<CommPtr>>();
  auto listener = listen_collecting(env, "tcp://0.0.0.0:0", accepted);
  const auto listen = listener->listen_address();
  const auto contact = listener->contact_address();
  CHECK(listen.rfind("tcp://0.0.0.0:", 0) == 0);
  const auto port = port_of(listen);
  CHECK(port != 0);
  CHECK(port_of(contact) == port);
  const auto host = comm::HostPort::parse(comm::Address::parse(contact).location).host;
  CHECK(host != "0.0.0.0");
  CHECK_FALSE(host.empty());

  auto client = comm::connect(env.registry, contact, 5000ms);
  round_trip(client, accepted->pop());
  auto by_loopback = comm::connect(env.registry, "tcp://127.0.0.1:" + std::to_string(port), 5000ms);
  round_trip(by_loopback, accepted->pop());
}

TEST_CASE("tcp: host names are resolved for listening and for connecting") {
  Env env;
  auto accepted = std::make_shared<WaitQueue<CommPtr>>();
  auto listener = listen_collecting(env, "tcp://localhost:0", accepted);
  const auto listen = listener->listen_address();
  CHECK(listen.rfind("tcp://127.0.0.1:", 0) == 0);  // IPv4 preferred, never a wildcard
  auto client = comm::connect(env.registry, "tcp://localhost:" + std::to_string(port_of(listen)),
                              5000ms);
  round_trip(client, accepted->pop());
}

TEST_CASE("tcp: listening on a port in use throws CommError") {
  Env env;
  auto accepted = std::make_shared<WaitQueue<CommPtr>>();
  auto first = listen_collecting(env, "tcp://127.0.0.1:0", accepted);
  try {
    listen_collecting(env, first->listen_address(), accepted);
    FAIL("a second listener on the same port started");
  } catch (const comm::CommError& e) {
    CHECK(e.code() == comm::errc::io);
    CHECK(std::string(e.what()).find(first->listen_address()) != std::string::npos);
  }
}

TEST_CASE("tcp: malformed tcp addresses fail with bad_address") {
  Env env;
  auto accepted = std::make_shared<WaitQueue<CommPtr>>();
  CHECK_THROWS_AS(listen_collecting(env, "tcp://127.0.0.1", accepted), comm::CommError);
  CHECK(raw_connect_error(env, "tcp://127.0.0.1:notaport") == comm::errc::bad_address);
}

TEST_CASE("tcp: connecting where nothing listens fails with refused") {
  Env env;
  std::string address;
  {
    auto accepted = std::make_shared<WaitQueue<CommPtr>>();
    auto listener = listen_collecting(env, "tcp://127.0.0.1:0", accepted);
    address = listener->contact_address();
  }  // destroyed: the port is free again
  CHECK(raw_connect_error(env, address) == comm::errc::refused);
  try {
    comm::connect(env.registry, address, 300ms);
    FAIL("connected to nothing");
  } catch (const comm::CommError& e) {
    CHECK(e.code() == comm::errc::refused);
  }
}

TEST_CASE("tcp: stop() stops accepting and keeps accepted comms open") {
  Env env;
  auto accepted = std::make_shared<WaitQueue<CommPtr>>();
  auto listener = listen_collecting(env, "tcp://127.0.0.1:0", accepted);
  auto client = comm::connect(env.registry, listener->contact_address(), 5000ms);
  auto server = accepted->pop();
  listener->stop();
  listener->stop();  // idempotent
  CHECK(raw_connect_error(env, listener->contact_address()) == comm::errc::refused);
  round_trip(client, server);
}

}  // namespace taskwire::test
