// tls:// errors: each certificate problem gives its own tls_errc at once (fatal: no retries),
// start-up problems with the files name the file and the flag, and a listener goes on serving
// after a peer that does not speak TLS. The certificates are make_test_certs.sh's.
#include "tests/comm/tcp/tcp_test_util.hpp"

#include <taskwire/comm/tls/tls_error.hpp>

#include <cerrno>
#include <memory>
#include <string_view>
#include <vector>

namespace taskwire::test {
namespace {

using comm::tls::tls_errc;

std::string cert(std::string_view name) {
  return std::string(TASKWIRE_TEST_TLS_DIR "/") + std::string(name);
}

// A config presenting NAME.pem/NAME.key (none when empty), trusting CA.pem (none when empty).
runtime::Config tls_config(std::string_view name, std::string_view ca) {
  auto c = runtime::Config::from_env();
  if (!name.empty()) {
    c.tls_cert_file = cert(std::string(name) + ".pem");
    c.tls_key_file = cert(std::string(name) + ".key");
  }
  if (!ca.empty()) c.tls_ca_file = cert(std::string(ca) + ".pem");
  c.connect_timeout = 5s;  // a failure here must be fatal, far sooner than this
  return c;
}

struct Rejection {
  error_code ec;
  std::string detail;
};

struct Server {
  explicit Server(runtime::Config config, const std::string& address = "tls://127.0.0.1:0",
                  comm::ListenOptions options = {})
      : env(std::move(config)), listener(comm::listen(
                                    env.registry, address,
                                    [q = accepted](CommPtr c) { q->push(c); },
                                    with_rejections(std::move(options)))) {}
  comm::ListenOptions with_rejections(comm::ListenOptions options) {
    options.on_reject = [q = rejected](error_code ec, std::string detail, std::string) {
      q->push({ec, std::move(detail)});
    };
    return options;
  }
  std::uint16_t port() const { return port_of(listener->contact_address()); }
  Env env;
  std::shared_ptr<WaitQueue<CommPtr>> accepted = std::make_shared<WaitQueue<CommPtr>>();
  std::shared_ptr<WaitQueue<Rejection>> rejected = std::make_shared<WaitQueue<Rejection>>();
  std::unique_ptr<comm::Listener> listener;
};

// True when the listener closed `s` (end of stream or reset); false when its receive timeout
// (10 s) passed with the connection still open.
bool closed_by_listener(RawSocket& s) {
  char byte = 0;
  const auto n = ::recv(s.fd(), &byte, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

// The connect's error: code and sentence.
std::pair<error_code, std::string> connect_error(Env& client, const std::string& address) {
  try {
    comm::connect(client.registry, address)->abort();
  } catch (const comm::CommError& e) {
    return {e.code(), e.what()};
  }
  FAIL("connecting to " << address << " succeeded");
  return {};
}

void check_round_trip(Env& client, Server& server) {
  auto c = comm::connect(client.registry, server.listener->contact_address());
  auto s = server.accepted->pop();
  REQUIRE(write_within(c, make_message({"ping"})) == error_code{});
  auto got = read_within(s);
  REQUIRE_FALSE(got.ec);
  CHECK(text(got.message.frames.at(0)) == "ping");
  c->close();
  s->close();
}

std::string config_error(const runtime::Config& config, const std::string& address) {
  Env env(config);
  try {
    comm::listen(env.registry, address, [](CommPtr) {});
  } catch (const comm::CommError& e) {
    CHECK(e.code() == tls_errc::config);
    return e.what();
  }
  FAIL("listening at " << address << " succeeded");
  return {};
}

}  // namespace

TEST_CASE("tls: mutual TLS between two processes' worth of contexts round-trips") {
  Server server(tls_config("node", "ca"));
  Env client(tls_config("node", "ca"));
  check_round_trip(client, server);
  CHECK(server.listener->contact_address().rfind("tls://127.0.0.1:", 0) == 0);
}

TEST_CASE("tls: without a CA file the listener does not ask for client certificates") {
  Server server(tls_config("node", ""));
  Env client(tls_config("", "ca"));
  check_round_trip(client, server);
}

TEST_CASE("tls: an expired server certificate fails at once with tls_errc::expired") {
  Server server(tls_config("expired", ""));
  Env client(tls_config("", "ca"));
  auto [ec, what] = connect_error(client, server.listener->contact_address());
  CHECK(ec == tls_errc::expired);
  CHECK(comm::is_fatal(ec));
  CHECK(what.find("certificate has expired") != std::string::npos);
}

TEST_CASE("tls: a server certificate from another CA, or self-signed, is untrusted") {
  for (const char* name : {"stranger", "self"}) {
    Server server(tls_config(name, ""));
    Env client(tls_config("", "ca"));
    auto [ec, what] = connect_error(client, server.listener->contact_address());
    CHECK(ec == tls_errc::untrusted);
    CHECK(what.find("--tls-ca-file") != std::string::npos);
  }
}

TEST_CASE("tls: a certificate for 127.0.0.1 does not pass for 127.0.0.2") {
  Server server(tls_config("node", ""), "tls://127.0.0.2:0");
  Env client(tls_config("", "ca"));
  auto [ec, what] = connect_error(client, server.listener->contact_address());
  CHECK(ec == tls_errc::name_mismatch);
}

TEST_CASE("tls: under mutual TLS a client without a certificate is refused, clearly") {
  Server server(tls_config("node", "ca"));
  Env client(tls_config("", "ca"));
  auto [ec, what] = connect_error(client, server.listener->contact_address());
  CHECK(ec == tls_errc::no_client_cert);
  CHECK(what.find("--tls-cert") != std::string::npos);
  Env good(tls_config("node", "ca"));
  check_round_trip(good, server);  // the listener goes on serving
}

TEST_CASE("tls: under mutual TLS a client certificate from another CA is refused") {
  Server server(tls_config("node", "ca"));
  Env client(tls_config("stranger", "ca"));
  auto [ec, what] = connect_error(client, server.listener->contact_address());
  CHECK(ec == tls_errc::rejected_by_peer);
}

TEST_CASE("tls: a tls client at a tcp listener fails at once with not_tls, and the listener "
          "says that this port does not speak TLS") {
  Server tcp_server(runtime::Config::from_env(), "tcp://127.0.0.1:0");
  Env client(tls_config("", "ca"));
  auto [ec, what] = connect_error(client, "tls://127.0.0.1:" + std::to_string(tcp_server.port()));
  CHECK(ec == tls_errc::not_tls);
  CHECK(what.find("this port does not speak TLS") != std::string::npos);
  CHECK(what.find("tcp://") != std::string::npos);
  // The listener's side: the ClientHello read as TLS, not as a malformed message.
  const auto rejection = tcp_server.rejected->pop(kWait);
  CHECK(rejection.ec == comm::errc::tls);
  CHECK_THAT(rejection.detail, Catch::Contains("speaks TLS, and this port does not speak TLS"));
}

TEST_CASE("tls: a plain tcp client at a tls listener is told that this port speaks TLS, and the "
          "listener goes on serving") {
  LogCapture log;
  Server server(tls_config("node", ""));
  auto config = runtime::Config::from_env();
  config.connect_timeout = 20s;  // the connect must fail of the refusal, long before this
  Env plain(config);
  const auto port = std::to_string(server.port());
  auto [ec, what] = connect_error(plain, "tcp://127.0.0.1:" + port);
  CHECK(ec == comm::errc::tls);  // fatal: not retried until the timeout
  CHECK_THAT(what, Catch::Contains("this port speaks TLS: connect to tls://127.0.0.1:" + port));
  CHECK(log.has_warning({"not a TLS handshake", "a tcp:// client at a tls:// port"}));
  Env client(tls_config("", "ca"));
  check_round_trip(client, server);
}

TEST_CASE("tls: over the pending-handshake cap the oldest connection still in its TLS "
          "handshake is dropped, and a real client gets in") {
  auto config = tls_config("node", "");
  config.handshake_timeout = 60s;  // silent peers would otherwise hold their sockets 60 s
  comm::ListenOptions options;
  options.max_pending_handshakes = 4;
  Server server(config, "tls://127.0.0.1:0", options);
  std::vector<std::unique_ptr<RawSocket>> silent;
  for (int i = 0; i < 5; ++i) silent.push_back(std::make_unique<RawSocket>(server.port()));
  CHECK(closed_by_listener(*silent[0]));  // displaced by the fifth
  Env client(tls_config("", "ca"));
  check_round_trip(client, server);  // displaces the next oldest on its way in
  CHECK(closed_by_listener(*silent[1]));
}

TEST_CASE("tls: unusable files are start-up errors naming the file and the flag") {
  auto missing = tls_config("node", "");
  missing.tls_cert_file = cert("no-such.pem");
  auto what = config_error(missing, "tls://127.0.0.1:0");
  CHECK(what.find("--tls-cert") != std::string::npos);
  CHECK(what.find("no-such.pem") != std::string::npos);
  CHECK(what.find("No such file") != std::string::npos);

  auto mismatched = tls_config("node", "");
  mismatched.tls_key_file = cert("stranger.key");
  what = config_error(mismatched, "tls://127.0.0.1:0");
  CHECK(what.find("does not match") != std::string::npos);
  CHECK(what.find("stranger.key") != std::string::npos);

  auto not_a_ca = tls_config("node", "");
  not_a_ca.tls_ca_file = cert("node.key");
  what = config_error(not_a_ca, "tls://127.0.0.1:0");
  CHECK(what.find("--tls-ca-file") != std::string::npos);

  what = config_error(tls_config("", "ca"), "tls://127.0.0.1:0");
  CHECK(what.find("needs a certificate") != std::string::npos);
}

}  // namespace taskwire::test
