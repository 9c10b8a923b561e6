// Peers that do not speak taskwire, or break the limits: each is rejected with errc::protocol,
// logged with its address, nothing is allocated for what it announced, and everyone else
// keeps being served.
#include "tcp_test_util.hpp"

namespace taskwire::test {
namespace {

struct Reject {
  error_code ec;
  std::string detail;
  std::string peer;
};

/// A handshaking listener on 127.0.0.1:0 that records accepted comms and rejections.
struct Server {
  explicit Server(Env& env) {
    auto on_reject = [rejects = rejects](error_code ec, std::string detail, std::string peer) {
      rejects->push({ec, std::move(detail), std::move(peer)});
    };
    listener = comm::listen(
        env.registry, "tcp://127.0.0.1:0", [accepted = accepted](CommPtr c) { accepted->push(c); },
        comm::ListenOptions{.handshake = std::nullopt, .on_reject = std::move(on_reject)});
  }
  std::shared_ptr<WaitQueue<CommPtr>> accepted = std::make_shared<WaitQueue<CommPtr>>();
  std::shared_ptr<WaitQueue<Reject>> rejects = std::make_shared<WaitQueue<Reject>>();
  std::unique_ptr<comm::Listener> listener;
};

/// A real client connects to `server` and a message goes there and back.
void check_still_serving(Env& env, Server& server) {
  auto client = comm::connect(env.registry, server.listener->contact_address(), 5000ms);
  auto accepted = server.accepted->pop();
  REQUIRE(write_within(client, make_message({"ping", "payload"})) == error_code{});
  auto got = read_within(accepted);
  REQUIRE_FALSE(got.ec);
  REQUIRE(got.message.frames.size() == 2);
  CHECK(text(got.message.frames[1]) == "payload");
  REQUIRE(write_within(accepted, make_message({"pong"})) == error_code{});
  auto back = read_within(client);
  REQUIRE_FALSE(back.ec);
  CHECK(text(back.message.frames.at(0)) == "pong");
}

/// Sends `bytes` from a raw socket, half-closes, and checks the rejection and the log.
void check_rejected(std::string_view bytes, std::string_view log_fragment) {
  Env env;
  LogCapture log;
  Server server(env);
  alloc_watch::reset();
  const auto rss_before = resident_bytes();

  RawSocket raw(port_of(server.listener->contact_address()));
  const auto raw_address = raw.address();
  raw.send_all(bytes);
  raw.shutdown_write();
  raw.drain();  // the server's hello, then EOF once it gives up on us

  auto reject = server.rejects->pop();
  CHECK(reject.ec == comm::errc::protocol);
  CHECK(reject.peer == raw_address);
  CHECK(log.has_warning({raw_address, log_fragment}));
  CHECK(alloc_watch::largest() < (std::size_t{256} << 20));
  CHECK(resident_bytes() < rss_before + (std::size_t{256} << 20));
  CHECK(server.accepted->size() == 0);

  check_still_serving(env, server);
}

}  // namespace

TEST_CASE("tcp: the allocation watch sees a large allocation") {
  // Proves the check below can fail: the watch is in this binary's operator new.
  alloc_watch::reset();
  auto* p = new char[std::size_t{257} << 20];  // never touched: no memory is used
  asm volatile("" : : "g"(p) : "memory");     // keep the allocation
  delete[] p;
  CHECK(alloc_watch::largest() >= (std::size_t{257} << 20));
}

TEST_CASE("tcp: raw garbage bytes are rejected and the listener keeps serving") {
  check_rejected("GET / HTTP/1.1\r\nHost: scheduler\r\n\r\n", "frames");
}

TEST_CASE("tcp: a truncated frame is rejected and the listener keeps serving") {
  // One frame of 100 bytes announced, 10 sent, then the peer closes its side.
  check_rejected(u64_le(1) + u64_le(100) + std::string(10, 'x'), "part-way through a message");
}

TEST_CASE("tcp: a prefix announcing a 1 TiB frame is rejected without allocating it") {
  check_rejected(u64_le(1) + u64_le(std::uint64_t{1} << 40), "1099511627776");
}

TEST_CASE("tcp: a prefix announcing too many frames is rejected without allocating them") {
  check_rejected(u64_le(std::uint64_t{1} << 62), "frames");
}

TEST_CASE("tcp: an oversized message after the handshake fails the receiver's read and "
          "spares the other comms") {
  Env small(Env::with_max_frame_bytes(1024));  // the receiving side's limit
  Env big;                                      // a sender that allows more
  LogCapture log;
  Server server(small);
  const auto address = server.listener->contact_address();

  auto a = comm::connect(big.registry, address, 5000ms);
  auto sa = server.accepted->pop();
  auto b = comm::connect(big.registry, address, 5000ms);
  auto sb = server.accepted->pop();
  REQUIRE(sa->peer_address() == a->local_address());
  REQUIRE(sb->peer_address() == b->local_address());

  auto oversized = make_message({"header", std::string(4096, 'z')});
  alloc_watch::reset();
  REQUIRE(write_within(a, std::move(oversized)) == error_code{});
  auto failed = read_within(sa);
  CHECK(failed.ec == comm::errc::protocol);
  CHECK(log.has_warning({sa->peer_address(), "limit is 1024"}));
  CHECK(alloc_watch::largest() < 4096);
  CHECK(sa->closed());
  // The sender learns its comm is gone.
  CHECK(read_within(a).ec == comm::errc::closed);

  // The other comm on the same listener is untouched.
  REQUIRE(write_within(b, make_message({"still", "here"})) == error_code{});
  auto got = read_within(sb);
  REQUIRE_FALSE(got.ec);
  CHECK(text(got.message.frames.at(1)) == "here");
  REQUIRE(write_within(sb, make_message({"yes"})) == error_code{});
  CHECK(text(read_within(b).message.frames.at(0)) == "yes");

  // The receiving context also refuses to send over its own limit, and stays usable.
  CHECK(write_within(sb, make_message({std::string(2048, 'q')})) == comm::errc::protocol);
  CHECK(log.has_warning({sb->peer_address(), "limit of 1024"}));
  REQUIRE(write_within(sb, make_message({"after"})) == error_code{});
  CHECK(text(read_within(b).message.frames.at(0)) == "after");
}

}  // namespace taskwire::test
