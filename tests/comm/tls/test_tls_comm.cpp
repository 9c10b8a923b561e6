// tls:// comms below the taskwire handshake (TlsBackend's raw listener and connector): a large
// message crossing many TLS records and many socket waits, with small ones queued behind it
// and the reader starting only later; and a raw OpenSSL peer whose connection ends between
// records or part-way through one. The certificates are make_test_certs.sh's.
#include "tests/comm/tcp/tcp_test_util.hpp"

#include <taskwire/comm/core/backend.hpp>
#include <taskwire/comm/tls/tls_backend.hpp>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <atomic>
#include <fstream>

namespace taskwire::test {
namespace {

std::string cert(const char* name) { return std::string(TASKWIRE_TEST_TLS_DIR "/") + name; }

runtime::Config node_config() {
  auto c = runtime::Config::from_env();
  c.tls_cert_file = cert("node.pem");
  c.tls_key_file = cert("node.key");
  c.tls_ca_file = cert("ca.pem");
  return c;
}

// A raw tls:// listener on 127.0.0.1 and what it accepts, no taskwire handshake.
struct RawTlsServer {
  explicit RawTlsServer(Env& env) : backend(env.ctx) {
    listener = backend.make_listener(comm::Address::parse("tls://127.0.0.1:0"),
                                     [q = accepted](CommPtr c) { q->push(std::move(c)); }, {});
    listener->start();
  }
  CommPtr connect() {
    auto done = std::make_shared<std::promise<std::pair<error_code, CommPtr>>>();
    auto fut = done->get_future();
    backend.make_connector()->async_connect(
        comm::Address::parse(listener->contact_address()),
        [done](error_code ec, CommPtr c) { done->set_value({ec, std::move(c)}); });
    REQUIRE(fut.wait_for(kWait) == std::future_status::ready);
    auto [ec, c] = fut.get();
    REQUIRE_FALSE(ec);
    return c;
  }
  comm::tls::TlsBackend backend;
  std::shared_ptr<WaitQueue<CommPtr>> accepted = std::make_shared<WaitQueue<CommPtr>>();
  std::unique_ptr<comm::Listener> listener;
};

Frame patterned(std::size_t n, unsigned seed) {
  Frame f = Frame::allocate(n);
  for (std::size_t i = 0; i < n; ++i) f.mutable_data()[i] = static_cast<char>((i * 7 + seed) % 251);
  return f;
}

bool has_pattern(const Frame& f, std::size_t n, unsigned seed) {
  if (f.size() != n) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (f.data()[i] != static_cast<char>((i * 7 + seed) % 251)) return false;
  return true;
}

// The most the kernel's socket buffers of one connection hold (both ends).
std::uint64_t kernel_buffer_bytes() {
  std::uint64_t total = 0;
  for (const char* path : {"/proc/sys/net/ipv4/tcp_wmem", "/proc/sys/net/ipv4/tcp_rmem"}) {
    std::ifstream in(path);
    std::uint64_t least = 0, initial = 0, most = 0;
    in >> least >> initial >> most;
    total += most;
  }
  return total;
}

// A blocking OpenSSL client at `port` trusting the test CA, presenting node's certificate.
// After the handshake its records go to a memory BIO, so the test chooses which of their
// bytes reach the socket.
class RawTlsClient {
 public:
  explicit RawTlsClient(std::uint16_t port) : socket_(port) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    REQUIRE(ctx_);
    REQUIRE(SSL_CTX_load_verify_locations(ctx_, cert("ca.pem").c_str(), nullptr) == 1);
    REQUIRE(SSL_CTX_use_certificate_chain_file(ctx_, cert("node.pem").c_str()) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(ctx_, cert("node.key").c_str(), SSL_FILETYPE_PEM) == 1);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(ctx_);
    REQUIRE(ssl_);
    REQUIRE(SSL_set_fd(ssl_, socket_.fd()) == 1);
    REQUIRE(SSL_connect(ssl_) == 1);
    records_ = BIO_new(BIO_s_mem());
    REQUIRE(records_);
    SSL_set0_wbio(ssl_, records_);  // the session owns it
  }
  ~RawTlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  RawTlsClient(const RawTlsClient&) = delete;
  RawTlsClient& operator=(const RawTlsClient&) = delete;

  /// The TLS record(s) carrying `plaintext`, not sent.
  std::string seal(const std::string& plaintext) {
    REQUIRE(SSL_write(ssl_, plaintext.data(), static_cast<int>(plaintext.size())) ==
            static_cast<int>(plaintext.size()));
    char* data = nullptr;
    const long n = BIO_get_mem_data(records_, &data);
    std::string out(data, static_cast<std::size_t>(n));
    REQUIRE(BIO_reset(records_) == 1);
    return out;
  }
  RawSocket& socket() { return socket_; }

 private:
  RawSocket socket_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  BIO* records_ = nullptr;
};

}  // namespace

TEST_CASE("tls: a 64 MiB message crosses many records and waits and small ones behind it keep order") {
  constexpr std::size_t kBig = std::size_t{64} << 20;
  REQUIRE(kernel_buffer_bytes() < kBig);  // so the big message cannot go out before reading
  Env env(node_config());
  RawTlsServer server(env);
  auto writer = server.connect();
  auto reader = server.accepted->pop();

  std::atomic<int> written{0};
  auto count = [&written](error_code ec) {
    if (!ec) ++written;
  };
  writer->async_write(Message({patterned(100, 1)}), count);
  writer->async_write(Message({Frame("head"), patterned(kBig, 2), patterned(5000, 3)}), count);
  for (unsigned i = 0; i < 3; ++i) writer->async_write(Message({patterned(40'000, 10 + i)}), count);

  auto first = read_within(reader);
  REQUIRE_FALSE(first.ec);
  CHECK(has_pattern(first.message.frames.at(0), 100, 1));
  // Nobody has read the big message: the socket cannot have taken it, nor what follows.
  CHECK(written.load() <= 1);

  auto big = read_within(reader);
  REQUIRE_FALSE(big.ec);
  REQUIRE(big.message.frames.size() == 3);
  CHECK(text(big.message.frames[0]) == "head");
  CHECK(has_pattern(big.message.frames[1], kBig, 2));
  CHECK(has_pattern(big.message.frames[2], 5000, 3));
  for (unsigned i = 0; i < 3; ++i) {
    auto small = read_within(reader);
    REQUIRE_FALSE(small.ec);
    CHECK(has_pattern(small.message.frames.at(0), 40'000, 10 + i));
  }
  CHECK(reader->bytes_received() >= kBig);
  writer->close();
  CHECK(read_within(reader).ec == comm::errc::closed);
  CHECK(written.load() == 5);
}

TEST_CASE("tls: a stream ending between records reads as closed and inside one as protocol") {
  Env env(node_config());
  RawTlsServer server(env);
  const auto port = port_of(server.listener->contact_address());
  const std::string payload(3000, 'x');
  const std::string whole = encode(Message({Frame(payload)}));

  // The client sends what `records` makes, then ends its stream (no close_notify); the
  // server's comm must deliver `messages` whole ones before the end, then fail with `end`.
  auto check = [&](auto records, int messages, comm::errc end) {
    RawTlsClient client(port);
    auto accepted = server.accepted->pop();
    client.socket().send_all(records(client));
    client.socket().shutdown_write();
    for (int i = 0; i < messages; ++i) {
      auto got = read_within(accepted);
      REQUIRE_FALSE(got.ec);
      CHECK(text(got.message.frames.at(0)) == payload);
    }
    CHECK(read_within(accepted).ec == end);
  };
  SECTION("between records: the message, then closed") {
    check([&](RawTlsClient& c) { return c.seal(whole); }, 1, comm::errc::closed);
  }
  SECTION("part-way through a record: the message before it, then protocol") {
    check([&](RawTlsClient& c) {
            const auto first = c.seal(whole);
            const auto second = c.seal(whole);
            return first + second.substr(0, second.size() / 2);
          },
          1, comm::errc::protocol);
  }
  SECTION("a whole record holding half a message, then the end: protocol") {
    check([&](RawTlsClient& c) { return c.seal(whole.substr(0, whole.size() / 2)); }, 0,
          comm::errc::protocol);
  }
}

}  // namespace taskwire::test
