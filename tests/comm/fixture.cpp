#include "tests/comm/fixture.hpp"

#include <taskwire/comm/backends.hpp>

#include <stdexcept>

namespace taskwire::test {

// Context with two threads so strands are exercised for real.
void make_runtime(std::unique_ptr<runtime::Context>& ctx, std::unique_ptr<comm::Registry>& reg,
                  const std::string& role, bool with_tls) {
  auto config = runtime::Config::from_env();
  config.role = role;
  if (with_tls) {  // mutual TLS: this process is its own server and client
    config.tls_ca_file = TASKWIRE_TEST_TLS_DIR "/ca.pem";
    config.tls_cert_file = TASKWIRE_TEST_TLS_DIR "/node.pem";
    config.tls_key_file = TASKWIRE_TEST_TLS_DIR "/node.key";
  }
  ctx = std::make_unique<runtime::Context>(config, 2);
  reg = std::make_unique<comm::Registry>(*ctx);
  comm::register_builtin_backends(*reg);
  ctx->start();
}

namespace {

class InprocFixture final : public SchemeFixture {
 public:
  InprocFixture() { make_runtime(context_, registry_, "test"); }
  std::string scheme() const override { return "inproc"; }
  std::string listen_address() override { return "inproc://auto"; }
  std::string target(const comm::Listener& l) override { return l.contact_address(); }
  std::string unreachable_address() override { return "inproc://nobody-listens-here"; }
};

// tcp:// and tls:// (TLS over the same sockets, with the test certificates).
class TcpFixture final : public SchemeFixture {
 public:
  explicit TcpFixture(std::string scheme) : scheme_(std::move(scheme)) {
    make_runtime(context_, registry_, "test", scheme_ == "tls");
  }
  std::string scheme() const override { return scheme_; }
  std::string listen_address() override { return scheme_ + "://127.0.0.1:0"; }
  std::string target(const comm::Listener& l) override { return l.contact_address(); }
  std::string unreachable_address() override {
    // A port that was free a moment ago: bind, read the port, close.
    asio::io_context io;
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    auto port = a.local_endpoint().port();
    a.close();
    return scheme_ + "://127.0.0.1:" + std::to_string(port);
  }

 private:
  std::string scheme_;
};

std::unique_ptr<SchemeFixture>& instance() {
  static std::unique_ptr<SchemeFixture> f;
  return f;
}

}  // namespace

SchemeFixture& fixture() {
  auto& f = instance();
  if (f) return *f;
  const auto& scheme = selected_scheme();
  if (scheme == "inproc") f = std::make_unique<InprocFixture>();
  else if (scheme == "tcp" || scheme == "tls") f = std::make_unique<TcpFixture>(scheme);
#ifdef TASKWIRE_TEST_WITH_MPI
  else if (scheme == "mpi") f = make_mpi_fixture();
#endif
  else throw std::invalid_argument("no test fixture for scheme '" + scheme + "'");
  teardown_hook = [] { instance().reset(); };
  return *f;
}

}  // namespace taskwire::test
