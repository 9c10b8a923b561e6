#include <taskwire/comm/tls/tls_handshake.hpp>

#include <taskwire/comm/tls/tls_context.hpp>
#include <taskwire/comm/tls/tls_error.hpp>

#include <openssl/err.h>
#include <spdlog/spdlog.h>

namespace taskwire::comm::tls {
namespace {

class HandshakeOp : public std::enable_shared_from_this<HandshakeOp> {
 public:
  HandshakeOp(std::unique_ptr<TlsStream> stream, std::string peer, HandshakeDone done)
      : stream_(std::move(stream)), timer_(stream_->socket.get_executor()), peer_(std::move(peer)),
        done_(std::move(done)) {}

  void start(asio::ssl::stream_base::handshake_type side, std::chrono::milliseconds timeout) {
    side_ = side;
    timer_.expires_after(timeout);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (ec || self->finished_) return;  // finished_: the timer fired as the handshake ended
      self->timed_out_ = true;
      error_code ignored;
      self->stream_->socket.close(ignored);  // the wait ends with operation_aborted
    });
    if (side == asio::ssl::stream_base::client) SSL_set_connect_state(ssl());
    else SSL_set_accept_state(ssl());
    step();
  }

 private:
  SSL* ssl() const { return stream_->ssl.get(); }

  // One SSL_do_handshake call, as far as the socket lets it go; then a wait on the socket
  // for what it asked, and again.
  void step() {
    clear_ssl_errors();
    const auto outcome = ssl_outcome(ssl(), SSL_do_handshake(ssl()));
    if (outcome.kind == SslOutcome::done) return finish({});
    if (outcome.kind == SslOutcome::failed) return finish(outcome.ec);
    stream_->socket.async_wait(wait_for(outcome),
                               [self = shared_from_this()](const error_code& ec) {
                                 if (ec || self->timed_out_) return self->finish(ec);
                                 self->step();
                               });
  }

  void finish(const error_code& ec) {
    finished_ = true;
    timer_.cancel();
    const char* who = side_ == asio::ssl::stream_base::client ? "with" : "from";
    if (!ec && !timed_out_) return done_({}, std::move(stream_));
    if (timed_out_) {
      spdlog::warn("tls: TLS handshake {} {} did not finish in time", who, peer_);
      return done_(make_error_code(errc::timeout), nullptr);
    }
    const long verify = SSL_get_verify_result(ssl());
    // Under TLS 1.2 a server refuses a client without a certificate inside the handshake,
    // with a generic alert; the client knows it was asked for one.
    const bool no_certificate = side_ == asio::ssl::stream_base::client &&
                                server_wanted_missing_certificate(ssl());
    const auto code = no_certificate ? make_error_code(tls_errc::no_client_cert)
                                     : translate_tls_error(ec, verify, true);
    spdlog::warn("tls: TLS handshake {} {} failed: {}: {}", who, peer_,
                 describe_tls_error(ec, verify), code.message());
    done_(code, nullptr);
  }

  std::unique_ptr<TlsStream> stream_;
  asio::steady_timer timer_;
  std::string peer_;
  HandshakeDone done_;
  asio::ssl::stream_base::handshake_type side_ = asio::ssl::stream_base::client;
  bool timed_out_ = false;
  bool finished_ = false;
};

}  // namespace

void async_tls_handshake(std::unique_ptr<TlsStream> stream,
                         asio::ssl::stream_base::handshake_type side,
                         std::chrono::milliseconds timeout, std::string peer, HandshakeDone done) {
  std::make_shared<HandshakeOp>(std::move(stream), std::move(peer), std::move(done))
      ->start(side, timeout);
}

}  // namespace taskwire::comm::tls
