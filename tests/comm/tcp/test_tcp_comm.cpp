// TcpComm below the handshake: framing over real sockets, buffering, ordering, close and abort.
// Comms here come straight from the tcp backend's connector and listener.
#include "tcp_test_util.hpp"

#include <atomic>
#include <thread>

namespace taskwire::test {
namespace {

/// A raw (un-handshaken) tcp listener on 127.0.0.1:0 of `env`'s backend.
struct RawServer {
  explicit RawServer(Env& env) {
    listener = env.registry.get("tcp").make_listener(
        comm::Address::parse("tcp://127.0.0.1:0"),
        [accepted = accepted](CommPtr c) { accepted->push(std::move(c)); }, {});
    listener->start();
  }
  std::uint16_t port() const { return port_of(listener->contact_address()); }
  std::shared_ptr<WaitQueue<CommPtr>> accepted = std::make_shared<WaitQueue<CommPtr>>();
  std::unique_ptr<comm::Listener> listener;
};

CommPtr raw_connect(Env& env, const std::string& address) {
  auto done = std::make_shared<std::promise<std::pair<error_code, CommPtr>>>();
  auto fut = done->get_future();
  auto connector = env.registry.get("tcp").make_connector();
  connector->async_connect(comm::Address::parse(address), [done](error_code ec, CommPtr c) {
    done->set_value({ec, std::move(c)});
  });
  REQUIRE(fut.wait_for(kWait) == std::future_status::ready);
  auto [ec, c] = fut.get();
  REQUIRE_FALSE(ec);
  return c;
}

struct Pair {
  CommPtr client, server;
};

Pair raw_pair(Env& env, RawServer& server) {
  Pair p;
  p.client = raw_connect(env, server.listener->contact_address());
  p.server = server.accepted->pop();
  REQUIRE(p.server->peer_address() == p.client->local_address());
  return p;
}

std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return s;
}

}  // namespace

TEST_CASE("tcp: a multi-frame message keeps its frame boundaries and bytes") {
  Env env;
  RawServer server(env);
  auto [client, srv] = raw_pair(env, server);

  const auto mid = pattern(40 * 1024, 1);           // above the direct-read threshold
  const auto big = pattern(3 * 1024 * 1024 + 7, 2);  // many segments
  REQUIRE(write_within(client, make_message({"header", "", "a", mid, big, ""})) == error_code{});
  REQUIRE(write_within(client, Message{}) == error_code{});  // no frames at all
  REQUIRE(write_within(client, make_message({"last"})) == error_code{});

  auto got = read_within(srv);
  REQUIRE_FALSE(got.ec);
  REQUIRE(got.message.frames.size() == 6);
  CHECK(text(got.message.frames[0]) == "header");
  CHECK(got.message.frames[1].empty());
  CHECK(text(got.message.frames[2]) == "a");
  CHECK(text(got.message.frames[3]) == mid);
  CHECK(text(got.message.frames[4]) == big);
  CHECK(got.message.frames[5].empty());
  auto none = read_within(srv);
  REQUIRE_FALSE(none.ec);
  CHECK(none.message.frames.empty());
  CHECK(text(read_within(srv).message.frames.at(0)) == "last");

  CHECK(client->local_address().rfind("tcp://127.0.0.1:", 0) == 0);
  CHECK(srv->local_address() == server.listener->contact_address());
}

TEST_CASE("tcp: several small messages arriving in one segment are each delivered") {
  Env env;
  RawServer server(env);
  RawSocket raw(server.port());
  auto srv = server.accepted->pop();

  std::string bytes;
  for (int i = 0; i < 50; ++i) bytes += encode(make_message({"m", std::to_string(i)}));
  raw.send_all(bytes);
  for (int i = 0; i < 50; ++i) {
    auto got = read_within(srv);
    REQUIRE_FALSE(got.ec);
    REQUIRE(got.message.frames.size() == 2);
    CHECK(text(got.message.frames[1]) == std::to_string(i));
  }
}

TEST_CASE("tcp: prefixes and frames split across segments are reassembled") {
  Env env;
  RawServer server(env);
  RawSocket raw(server.port());
  auto srv = server.accepted->pop();

  const auto big = pattern(200 * 1024, 3);
  const auto bytes = encode(make_message({"split", big})) + encode(make_message({"next"}));
  // A byte at a time through the prefix, then a part of the large frame, then the rest.
  std::size_t sent = 0;
  for (; sent < 30; ++sent) {
    raw.send_all(bytes.substr(sent, 1));
    std::this_thread::sleep_for(1ms);
  }
  raw.send_all(bytes.substr(sent, 1000));
  sent += 1000;
  std::this_thread::sleep_for(20ms);
  raw.send_all(bytes.substr(sent));

  auto got = read_within(srv);
  REQUIRE_FALSE(got.ec);
  REQUIRE(got.message.frames.size() == 2);
  CHECK(text(got.message.frames[0]) == "split");
  CHECK(text(got.message.frames[1]) == big);
  CHECK(text(read_within(srv).message.frames.at(0)) == "next");
}

TEST_CASE("tcp: handlers never run inside the initiating call, even on the strand") {
  Env env;
  RawServer server(env);
  RawSocket raw(server.port());
  auto srv = server.accepted->pop();
  raw.send_all(encode(make_message({"one"})) + encode(make_message({"two"})));
  REQUIRE(text(read_within(srv).message.frames.at(0)) == "one");  // "two" stays buffered

  auto inside = std::make_shared<std::atomic<bool>>(false);
  auto results = std::make_shared<WaitQueue<std::pair<bool, std::string>>>();
  asio::post(srv->executor(), [srv, inside, results] {
    *inside = true;
    srv->async_read([inside, results](error_code, Message m) {
      results->push({inside->load(), m.frames.empty() ? "" : text(m.frames[0])});
    });
    *inside = false;
  });
  auto [was_inside, what] = results->pop();
  CHECK_FALSE(was_inside);
  CHECK(what == "two");

  // A write made inside a read handler: its handler runs after the read handler returns.
  raw.send_all(encode(make_message({"three"})));
  auto from_read_handler = std::make_shared<WaitQueue<std::pair<bool, error_code>>>();
  srv->async_read([srv, inside, from_read_handler](error_code, Message) {
    *inside = true;
    srv->async_write(make_message({"reply"}), [inside, from_read_handler](error_code ec) {
      from_read_handler->push({inside->load(), ec});
    });
    *inside = false;
  });
  auto [r_inside, r_ec] = from_read_handler->pop();
  CHECK_FALSE(r_inside);
  CHECK_FALSE(r_ec);

  // A write the socket takes at once, and one that fails at once, from the comm's strand.
  auto write_results = std::make_shared<WaitQueue<std::pair<bool, error_code>>>();
  auto write_on_strand = [&] {
    asio::post(srv->executor(), [srv, inside, write_results] {
      *inside = true;
      srv->async_write(make_message({"x"}), [inside, write_results](error_code ec) {
        write_results->push({inside->load(), ec});
      });
      *inside = false;
    });
    return write_results->pop();
  };
  auto [ok_inside, ok_ec] = write_on_strand();
  CHECK_FALSE(ok_inside);
  CHECK_FALSE(ok_ec);
  srv->abort();
  auto [w_inside, w_ec] = write_on_strand();
  CHECK_FALSE(w_inside);
  CHECK(w_ec == comm::errc::aborted);
}

TEST_CASE("tcp: messages from concurrent writers arrive whole and in each writer's order") {
  Env env(runtime::Config::from_env(), 2);
  RawServer server(env);
  auto [client, srv] = raw_pair(env, server);

  constexpr int kThreads = 4, kPerThread = 300;
  auto write_errors = std::make_shared<std::atomic<int>>(0);
  auto written = std::make_shared<std::atomic<int>>(0);
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t)
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i)
        client->async_write(make_message({std::to_string(t), std::to_string(i), pattern(i * 37, t)}),
                            [write_errors, written](error_code ec) {
                              if (ec) ++*write_errors;
                              ++*written;
                            });
    });
  for (auto& w : writers) w.join();

  std::vector<int> next(kThreads, 0);
  for (int n = 0; n < kThreads * kPerThread; ++n) {
    auto got = read_within(srv);
    REQUIRE_FALSE(got.ec);
    REQUIRE(got.message.frames.size() == 3);
    const int t = std::stoi(text(got.message.frames[0]));
    const int i = std::stoi(text(got.message.frames[1]));
    REQUIRE(i == next[t]);
    REQUIRE(text(got.message.frames[2]) == pattern(i * 37, t));
    ++next[t];
  }
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (*written < kThreads * kPerThread && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  CHECK(*written == kThreads * kPerThread);
  CHECK(*write_errors == 0);
}

TEST_CASE("tcp: close flushes queued writes, then the peer's read fails with closed") {
  Env env;
  RawServer server(env);
  auto [client, srv] = raw_pair(env, server);

  constexpr int kCount = 200;
  auto ok = std::make_shared<std::atomic<int>>(0);
  for (int i = 0; i < kCount; ++i)
    client->async_write(make_message({std::to_string(i), pattern(1000, i)}),
                        [ok](error_code ec) { if (!ec) ++*ok; });
  client->close();
  CHECK(client->closed());
  CHECK(write_within(client, make_message({"late"})) == comm::errc::closed);
  CHECK(read_within(client).ec == comm::errc::closed);

  for (int i = 0; i < kCount; ++i) {
    auto got = read_within(srv);
    REQUIRE_FALSE(got.ec);
    REQUIRE(text(got.message.frames.at(0)) == std::to_string(i));
  }
  CHECK(read_within(srv).ec == comm::errc::closed);
  CHECK(read_within(srv).ec == comm::errc::closed);  // and stays so
  CHECK(*ok == kCount);
  CHECK_FALSE(srv->closed());
  // Writes to a peer known to have closed fail with closed too.
  CHECK(write_within(srv, make_message({"to nobody"})) == comm::errc::closed);
}

TEST_CASE("tcp: close fails the local pending read with closed") {
  Env env;
  RawServer server(env);
  auto [client, srv] = raw_pair(env, server);
  auto done = std::make_shared<std::promise<error_code>>();
  auto fut = done->get_future();
  client->async_read([done](error_code ec, Message) { done->set_value(ec); });
  client->close();
  REQUIRE(fut.wait_for(kWait) == std::future_status::ready);
  CHECK(fut.get() == comm::errc::closed);
  CHECK(read_within(srv).ec == comm::errc::closed);
}

TEST_CASE("tcp: abort fails pending operations with aborted and is idempotent") {
  Env env;
  RawServer server(env);
  auto [client, srv] = raw_pair(env, server);
  auto done = std::make_shared<std::promise<error_code>>();
  auto fut = done->get_future();
  client->async_read([done](error_code ec, Message) { done->set_value(ec); });
  client->abort();
  client->abort();
  CHECK(client->closed());
  REQUIRE(fut.wait_for(kWait) == std::future_status::ready);
  CHECK(fut.get() == comm::errc::aborted);
  CHECK(read_within(client).ec == comm::errc::aborted);
  CHECK(write_within(client, make_message({"x"})) == comm::errc::aborted);
  client->close();  // after abort: nothing happens
  CHECK(read_within(srv).ec == comm::errc::closed);
}

TEST_CASE("tcp: a second concurrent read fails with protocol and leaves the first pending") {
  Env env;
  RawServer server(env);
  auto [client, srv] = raw_pair(env, server);
  auto first = std::make_shared<std::promise<ReadResult>>();
  auto fut = first->get_future();
  srv->async_read([first](error_code ec, Message m) { first->set_value({ec, std::move(m)}); });
  CHECK(read_within(srv).ec == comm::errc::protocol);
  REQUIRE(write_within(client, make_message({"hello"})) == error_code{});
  REQUIRE(fut.wait_for(kWait) == std::future_status::ready);
  auto got = fut.get();
  REQUIRE_FALSE(got.ec);
  CHECK(text(got.message.frames.at(0)) == "hello");
}

TEST_CASE("tcp: a message over the sender's own limits fails with protocol, nothing is sent") {
  Env env(Env::with_max_frame_bytes(1024));
  RawServer server(env);
  auto [client, srv] = raw_pair(env, server);
  CHECK(write_within(client, make_message({std::string(1025, 'x')})) == comm::errc::protocol);
  CHECK_FALSE(client->closed());
  REQUIRE(write_within(client, make_message({std::string(1024, 'y')})) == error_code{});
  auto got = read_within(srv);
  REQUIRE_FALSE(got.ec);
  CHECK(got.message.frames.at(0).size() == 1024);
}

TEST_CASE("tcp: an 8-byte ping-pong works through the blocking helpers") {
  Env env;
  RawServer server(env);
  auto [client, srv] = raw_pair(env, server);
  for (int i = 0; i < 200; ++i) {
    REQUIRE(write_within(client, make_message({"12345678"})) == error_code{});
    auto got = read_within(srv);
    REQUIRE_FALSE(got.ec);
    REQUIRE(write_within(srv, std::move(got.message)) == error_code{});
    auto back = read_within(client);
    REQUIRE_FALSE(back.ec);
    REQUIRE(text(back.message.frames.at(0)) == "12345678");
  }
}

}  // namespace taskwire::test
