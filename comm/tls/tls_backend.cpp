#include <taskwire/comm/tls/tls_backend.hpp>

#include <taskwire/comm/core/pending_handshakes.hpp>
#include <taskwire/comm/tcp/tcp_connector.hpp>
#include <taskwire/comm/tcp/tcp_listener.hpp>
#include <taskwire/comm/tls/tls_comm.hpp>
#include <taskwire/comm/tls/tls_context.hpp>
#include <taskwire/comm/tls/tls_error.hpp>
#include <taskwire/comm/tls/tls_handshake.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::comm::tls {
namespace {

using SslContextPtr = std::shared_ptr<asio::ssl::context>;

// The tcp:// form of a tls:// address, and back: the TCP backend's pieces name what they bind.
std::string as_tls(std::string tcp_address) {
  if (tcp_address.rfind("tcp://", 0) == 0) tcp_address.replace(0, 3, "tls");
  return tcp_address;
}

class TlsConnector final : public Connector {
 public:
  TlsConnector(asio::io_context& io, SslContextPtr ssl, const runtime::Config& config)
      : io_(io), ssl_(std::move(ssl)), limits_(config.limits),
        handshake_timeout_(config.handshake_timeout) {}

  void async_connect(const Address& address, RawConnectHandler handler) override {
    tcp::async_connect_socket(
        io_, address,
        [ssl = ssl_, limits = limits_, timeout = handshake_timeout_, address,
         h = std::move(handler)](error_code ec, tcp::Socket socket) mutable {
          if (ec) return h(ec, nullptr);
          std::unique_ptr<TlsStream> stream;
          try {
            stream = make_tls_stream(std::move(socket), *ssl);
            verify_server_name(stream->ssl.get(), HostPort::parse(address.location).host);
          } catch (const CommError& e) {
            return h(e.code(), nullptr);
          }
          async_tls_handshake(std::move(stream), asio::ssl::stream_base::client, timeout,
                              address.str(),
                              [limits, address, h = std::move(h)](error_code e,
                                                                  std::unique_ptr<TlsStream> s) {
                                if (e) return h(e, nullptr);
                                if (server_wanted_missing_certificate(s->ssl.get())) {
                                  const auto code = make_error_code(tls_errc::no_client_cert);
                                  spdlog::warn("tls: {}: {}", address, code.message());
                                  return h(code, nullptr);
                                }
                                h({}, std::make_shared<TlsComm>(std::move(s), limits));
                              });
        });
  }

 private:
  asio::io_context& io_;
  SslContextPtr ssl_;  // shared with the attempts and their streams, which need it alive
  runtime::Limits limits_;
  std::chrono::milliseconds handshake_timeout_;
};

// Accepts over a TcpListener, then runs each server handshake; a failed one is logged (with
// the peer's address) and dropped, and the listener goes on serving. A connection in its TLS
// handshake counts against the listener's pending-handshake caps (RawListenOptions), so that
// silent peers at a tls:// port are evicted, oldest first, as they are at a tcp:// one.
class TlsListener final : public Listener {
 public:
  TlsListener(asio::io_context& io, const Address& address, SslContextPtr ssl,
              const runtime::Config& config, RawAcceptHandler on_comm,
              const RawListenOptions& options)
      : state_(std::make_shared<State>(std::move(ssl), config, std::move(on_comm),
                                       options.pending)),
        inner_(io, address, [state = state_](tcp::Socket socket) {
          state->handshake(std::move(socket));
        }) {}
  ~TlsListener() override { stop(); }

  void start() override { inner_.start(); }
  void stop() noexcept override {
    {
      std::lock_guard lock(state_->mu);
      state_->stopped = true;
    }
    inner_.stop();
  }
  std::string listen_address() const override { return as_tls(inner_.listen_address()); }
  std::string contact_address() const override { return as_tls(inner_.contact_address()); }

 private:
  struct State : std::enable_shared_from_this<State> {
    State(SslContextPtr ssl_, const runtime::Config& config, RawAcceptHandler on_comm_,
          std::shared_ptr<PendingHandshakes> pending_)
        : ssl(std::move(ssl_)), limits(config.limits), timeout(config.handshake_timeout),
          on_comm(std::move(on_comm_)), pending(std::move(pending_)) {}

    void handshake(tcp::Socket socket) {
      error_code ec;
      const auto remote = socket.remote_endpoint(ec);
      const std::string peer = ec ? std::string("tls://?") : format_endpoint(remote);
      const auto local = socket.local_endpoint(ec);
      const std::string here = ec ? std::string("tls://?") : format_endpoint(local);
      std::unique_ptr<TlsStream> stream;
      try {
        stream = make_tls_stream(std::move(socket), *ssl);
      } catch (const CommError& e) {
        spdlog::warn("tls: dropping the connection from {}: {}", peer, e.what());
        return;
      }
      auto op = std::make_shared<TlsHandshake>(std::move(stream),
                                               asio::ssl::stream_base::server, peer);
      PendingHandshakes::Ticket ticket;
      if (pending)
        ticket = pending->admit(peer, here, [weak = std::weak_ptr<TlsHandshake>(op)] {
          if (auto o = weak.lock()) o->abort();
        });
      op->start(timeout, [self = shared_from_this(), ticket](error_code e,
                                                             std::unique_ptr<TlsStream> s) {
        // Over now, whatever the outcome: the comm, if any, is counted anew by the taskwire
        // handshake's own admission.
        if (ticket) self->pending->finish(ticket);
        if (e) return;  // logged by the handshake
        auto comm = std::make_shared<TlsComm>(std::move(s), self->limits);
        std::lock_guard lock(self->mu);
        if (self->stopped) return comm->abort();
        self->on_comm(std::move(comm));
      });
    }

    SslContextPtr ssl;
    const runtime::Limits limits;
    const std::chrono::milliseconds timeout;
    RawAcceptHandler on_comm;
    std::shared_ptr<PendingHandshakes> pending;  // null: not capped
    std::recursive_mutex mu;  // recursive: on_comm may stop the listener
    bool stopped = false;     // once set, on_comm is not called again
  };

  std::shared_ptr<State> state_;
  tcp::TcpListener inner_;
};

}  // namespace

std::unique_ptr<Connector> TlsBackend::make_connector() {
  std::lock_guard lock(mu_);
  if (!client_context_) client_context_ = make_client_context(context_.config());
  return std::make_unique<TlsConnector>(context_.io(), client_context_, context_.config());
}

std::unique_ptr<Listener> TlsBackend::make_listener(const Address& address,
                                                    RawAcceptHandler on_comm,
                                                    const RawListenOptions& options) {
  return std::make_unique<TlsListener>(context_.io(), address,
                                       make_server_context(context_.config()),
                                       context_.config(), std::move(on_comm), options);
}

}  // namespace taskwire::comm::tls
