// The authenticated handshake end to end, in one process: who is accepted and refused (and
// what each side says), what a prober sees, a replayed handshake, and the pre-auth bounds.
#include "tests/security/auth_helpers.hpp"

#include <taskwire/comm/core/handshake.hpp>
#include <taskwire/comm/core/handshake_codec.hpp>
#include <taskwire/runtime/raw_codec.hpp>

#include <boost/archive/basic_archive.hpp>

#include <catch2/catch.hpp>

#include <set>
#include <thread>

using namespace taskwire;
using namespace taskwire::test;
using namespace std::chrono_literals;
namespace codec = comm::handshake_codec;
using comm::errc;

namespace {

constexpr auto kWait = 20s;
const std::string kToken = "tok-SECRET-9f3a-only-here";

comm::ListenOptions listening(const TestRuntime& rt, const std::string& token,
                              std::chrono::milliseconds handshake_timeout = 20s) {
  comm::ListenOptions o;
  o.handshake = rt.handshake("scheduler", token);
  o.handshake->timeout = handshake_timeout;
  return o;
}

comm::ConnectOptions connecting(const TestRuntime& rt, const std::string& token) {
  comm::ConnectOptions o;
  o.timeout = kWait;
  o.handshake = rt.handshake("client", token);
  o.handshake->expect_role = "scheduler";
  return o;
}

// The connect's error, or a default error_code if it succeeded.
comm::CommError connect_error(TestRuntime& rt, const std::string& address,
                              const comm::ConnectOptions& options) {
  try {
    comm::connect(*rt.registry, address, options)->close();
  } catch (const comm::CommError& e) {
    return e;
  }
  return comm::CommError({}, "connected");
}

void check_no_token_in(const std::string& bytes) {
  for (const auto& form : token_forms(kToken)) {
    INFO("looking for " << form);
    CHECK(bytes.find(form) == std::string::npos);
  }
}

std::vector<char> v5_hello(bool has_token, unsigned char nonce_seed = 7) {
  codec::Nonce nonce;
  nonce.fill(nonce_seed);
  return codec::encode_hello({comm::kProtocolVersion,
                              static_cast<std::uint32_t>(boost::archive::BOOST_ARCHIVE_VERSION()),
                              "prober", "client", nonce, has_token});
}

}  // namespace

TEST_CASE("auth: the right token is accepted, a wrong or missing one refused on both sides",
          "[security]") {
  const std::string scheme = GENERATE(as<std::string>{}, "inproc", "tcp");
  INFO(scheme);
  TestRuntime rt("test");
  RecordingServer server(rt, scheme == "tcp" ? "tcp://127.0.0.1:0" : "inproc://auto",
                         listening(rt, kToken));
  auto c = comm::connect(*rt.registry, server.address(), connecting(rt, kToken));
  CHECK(c->peer().role == "scheduler");
  REQUIRE(server.wait_accepted(1, kWait));
  c->close();

  const std::pair<std::string, std::string> cases[] = {{"wrong", "a wrong auth token"},
                                                       {"", "presented no auth token"}};
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& [token, sentence] = cases[i];
    INFO("client token '" << token << "'");
    const auto e = connect_error(rt, server.address(), connecting(rt, token));
    CHECK(e.code() == errc::auth);
    CHECK_THAT(e.what(), Catch::Contains(sentence));
    if (scheme == "tcp")  // the client's error names the server that refused it
      CHECK_THAT(e.what(), Catch::Contains("refused by the peer at " + server.address()));
    REQUIRE(server.wait_rejected(i + 1, kWait));  // in order
  }
  const auto rejected = server.rejections();
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(rejected[i].code == errc::auth);
    CHECK_THAT(rejected[i].detail, Catch::Contains(cases[i].second));
    if (scheme == "tcp") CHECK_THAT(rejected[i].detail, Catch::Contains("127.0.0.1"));
  }
}

TEST_CASE("auth: a side without a token accepts any peer, and one with a token refuses a "
          "peer without", "[security]") {
  TestRuntime rt("test");
  RecordingServer open_server(rt, "tcp://127.0.0.1:0", listening(rt, ""));
  // Both without: accepted, as before there were tokens.
  comm::connect(*rt.registry, open_server.address(), connecting(rt, ""))->close();
  // The client has a token, the server none: the client refuses the server.
  const auto e = connect_error(rt, open_server.address(), connecting(rt, kToken));
  CHECK(e.code() == errc::auth);
  CHECK_THAT(e.what(), Catch::Contains("presented no auth token"));
  CHECK_THAT(e.what(), Catch::Contains(open_server.address()));  // names whom it refused
  REQUIRE(open_server.wait_rejected(1, kWait));
  CHECK(open_server.rejections().at(0).code == errc::auth);
  CHECK_THAT(open_server.rejections().at(0).detail, Catch::Contains("refused by the peer"));
}

TEST_CASE("auth: a probe that connects and reads, or says hello and guesses, gets no token "
          "material", "[security]") {
  TestRuntime rt("test");
  RecordingServer server(rt, "tcp://127.0.0.1:0", listening(rt, kToken, 500ms));
  asio::io_context io;
  {  // Silent: the server's HELLO, then the close when its handshake times out.
    auto s = raw_connect(io, server.port());
    const auto got = read_until_closed(s);
    CHECK(got.find("TWHS") != std::string::npos);
    CHECK(got.find("TWPF") == std::string::npos);
    check_no_token_in(got);
  }
  {  // A HELLO claiming a token, then a made-up proof: refused, and never shown the server's.
    auto s = raw_connect(io, server.port());
    write_framed(s, v5_hello(true));
    codec::Mac guess;
    guess.fill(0x42);
    write_framed(s, codec::encode_proof({guess}));
    const auto got = read_until_closed(s);
    CHECK(got.find("TWPF") == std::string::npos);
    CHECK_THAT(got, Catch::Contains("a wrong auth token"));
    check_no_token_in(got);
  }
  REQUIRE(server.wait_rejected(2, kWait));
  std::multiset<error_code> codes;  // reported from different threads, in either order
  for (const auto& r : server.rejections()) codes.insert(r.code);
  CHECK(codes == std::multiset<error_code>{make_error_code(errc::timeout),
                                           make_error_code(errc::auth)});
}

namespace {

// Forwards one connection from its own port to `target`, recording what the client sent.
class RecordingRelay {
 public:
  explicit RecordingRelay(std::uint16_t target)
      : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}), target_(target) {
    thread_ = std::thread([this] { run(); });
  }
  ~RecordingRelay() {
    if (thread_.joinable()) thread_.join();
  }
  std::string address() const {
    return "tcp://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }
  /// After the client and server have both closed.
  std::string client_bytes() {
    if (thread_.joinable()) thread_.join();
    return from_client_;
  }

 private:
  static void pump(tcp::socket& from, tcp::socket& to, std::string* record) {
    char buf[4096];
    error_code ec;
    for (;;) {
      const auto n = from.read_some(asio::buffer(buf), ec);
      if (ec) break;
      if (record) record->append(buf, n);
      asio::write(to, asio::buffer(buf, n), ec);
      if (ec) break;
    }
    to.shutdown(tcp::socket::shutdown_send, ec);
  }
  void run() {
    auto client = acceptor_.accept();
    tcp::socket server(io_);
    server.connect({asio::ip::make_address("127.0.0.1"), target_});
    std::thread back([&] { pump(server, client, nullptr); });
    pump(client, server, &from_client_);
    // The client is gone; the server keeps its comm open: end the other direction too.
    error_code ec;
    server.shutdown(tcp::socket::shutdown_both, ec);
    back.join();
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::uint16_t target_;
  std::string from_client_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("auth: a recorded handshake replayed on a new connection is refused", "[security]") {
  TestRuntime rt("test");
  RecordingServer server(rt, "tcp://127.0.0.1:0", listening(rt, kToken));
  RecordingRelay relay(server.port());
  auto c = comm::connect(*rt.registry, relay.address(), connecting(rt, kToken));
  REQUIRE(server.wait_accepted(1, kWait));
  c->close();  // the server's comm stays open; the relay ends once the client side has
  const std::string recorded = relay.client_bytes();
  REQUIRE(recorded.find("TWPF") != std::string::npos);  // HELLO, PROOF and VERDICT
  check_no_token_in(recorded);

  asio::io_context io;
  auto s = raw_connect(io, server.port());
  asio::write(s, asio::buffer(recorded));
  const auto got = read_until_closed(s);
  CHECK(got.find("TWOK") == std::string::npos);
  CHECK_THAT(got, Catch::Contains("a wrong auth token"));
  REQUIRE(server.wait_rejected(1, kWait));
  CHECK(server.rejections().at(0).code == errc::auth);
}

TEST_CASE("auth: before the handshake a frame announcing 8 GiB is refused unallocated, and a "
          "v4 peer is told the version", "[security]") {
  TestRuntime rt("test");
  RecordingServer server(rt, "tcp://127.0.0.1:0", listening(rt, kToken));
  asio::io_context io;
  {
    auto s = raw_connect(io, server.port());
    std::vector<char> prefix;
    runtime::raw_codec::append_le(prefix, std::uint64_t{1});
    runtime::raw_codec::append_le(prefix, std::uint64_t{8} << 30);
    asio::write(s, asio::buffer(prefix));
    (void)read_until_closed(s);  // the server's HELLO, then its abort
  }
  REQUIRE(server.wait_rejected(1, kWait));
  CHECK(server.rejections().at(0).code == errc::protocol);
  {  // protocol v4's HELLO, token in clear as v4 sent it
    auto s = raw_connect(io, server.port());
    std::vector<char> v4{'T', 'W', 'H', 'S'};
    runtime::raw_codec::append_le(v4, std::uint32_t{4});
    write_framed(s, v4);
    const auto got = read_until_closed(s);
    CHECK_THAT(got, Catch::Contains("protocol version mismatch"));
  }
  REQUIRE(server.wait_rejected(2, kWait));
  CHECK(server.rejections().at(1).code == errc::version);
  comm::connect(*rt.registry, server.address(), connecting(rt, kToken))->close();
}

TEST_CASE("auth: over the pending-handshake cap the oldest pending comm of the host with the "
          "most in handshake is dropped, and a real client still gets in", "[security]") {
  TestRuntime rt("test");
  auto options = listening(rt, kToken, 60s);  // silent peers would otherwise stay 60 s
  options.max_pending_handshakes = 4;
  RecordingServer server(rt, "tcp://127.0.0.1:0", options);
  asio::io_context io;
  auto address_of = [](const tcp::socket& s) {
    return "tcp://127.0.0.1:" + std::to_string(s.local_endpoint().port());
  };
  // Four from 127.0.0.1 fill the cap without an eviction: a burst from one host fits.
  std::vector<tcp::socket> a;
  for (int i = 0; i < 4; ++i) a.push_back(raw_connect(io, server.port()));
  // One each from 127.0.0.2, .3 and .4: each displaces the oldest of 127.0.0.1, the host
  // with the most in handshake.
  std::vector<tcp::socket> b;
  for (int i = 0; i < 3; ++i) {
    b.push_back(raw_connect(io, server.port(), fmt::format("127.0.0.{}", i + 2)));
    (void)read_until_closed(a[i]);
    REQUIRE(server.wait_rejected(i + 1, kWait));
  }
  // Now every host has one in handshake: a newcomer from 127.0.0.1 displaces its own host's.
  a.push_back(raw_connect(io, server.port()));
  (void)read_until_closed(a[3]);
  REQUIRE(server.wait_rejected(4, kWait));
  // The real client (from 127.0.0.1) displaces a[4], again of its own host, and gets in.
  comm::connect(*rt.registry, server.address(), connecting(rt, kToken))->close();
  CHECK(server.wait_accepted(1, kWait));
  (void)read_until_closed(a[4]);
  REQUIRE(server.wait_rejected(5, kWait));
  const auto rejected = server.rejections();
  REQUIRE(rejected.size() == 5);  // none of b: the other hosts' comms were never touched
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(rejected[i].peer == address_of(a[i]));
    CHECK(rejected[i].code == errc::aborted);
  }
}
