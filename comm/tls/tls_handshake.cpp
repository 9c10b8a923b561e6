#include <taskwire/comm/tls/tls_handshake.hpp>

#include <taskwire/comm/core/handshake.hpp>
#include <taskwire/comm/tls/tls_comm.hpp>
#include <taskwire/comm/tls/tls_context.hpp>
#include <taskwire/comm/tls/tls_error.hpp>

#include <fmt/format.h>
#include <openssl/err.h>
#include <spdlog/spdlog.h>

namespace taskwire::comm::tls {
namespace {

// The content type of the record every TLS (and SSL 3) client opens with: its ClientHello.
constexpr unsigned char kHandshakeRecord = 0x16;

}  // namespace

TlsHandshake::TlsHandshake(std::unique_ptr<TlsStream> stream, Side side, std::string peer)
    : stream_(std::move(stream)), executor_(stream_->socket.get_executor()), timer_(executor_),
      peer_(std::move(peer)), side_(side) {}

void TlsHandshake::start(std::chrono::milliseconds timeout, HandshakeDone done) {
  done_ = std::move(done);
  // On the strand: abort() may already be on its way there from another thread.
  asio::dispatch(executor_, [self = shared_from_this(), timeout] { self->begin(timeout); });
}

void TlsHandshake::abort() {
  asio::post(executor_, [self = shared_from_this()] {
    if (self->finished_ || self->cut_ != Cut::none) return;
    self->cut_ = Cut::aborted;
    error_code ignored;
    self->stream_->socket.close(ignored);  // the pending wait ends with operation_aborted
  });
}

void TlsHandshake::begin(std::chrono::milliseconds timeout) {
  if (cut_ == Cut::aborted) return finish(make_error_code(errc::aborted));
  arm_timer(timeout);
  if (side_ == asio::ssl::stream_base::client) {
    SSL_set_connect_state(ssl());
    return step();
  }
  SSL_set_accept_state(ssl());
  sniff();
}

// Ends the handshake (or the linger after a refusal) by closing the socket: whatever waits on
// it ends with operation_aborted.
void TlsHandshake::arm_timer(std::chrono::milliseconds after) {
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (ec || self->finished_) return;  // finished_: the timer fired as the handshake ended
    if (self->cut_ == Cut::none && !self->refused_plain_) self->cut_ = Cut::timed_out;
    error_code ignored;
    self->stream_->socket.close(ignored);
  });
}

// The first byte is peeked, not taken, so that OpenSSL reads the ClientHello whole.
void TlsHandshake::sniff() {
  stream_->socket.async_wait(
      asio::socket_base::wait_read, [self = shared_from_this()](const error_code& ec) {
        if (ec || self->cut_ != Cut::none) return self->finish(ec);
        unsigned char first = 0;
        error_code e;
        const auto n = self->stream_->socket.receive(asio::buffer(&first, 1),
                                                     asio::socket_base::message_peek, e);
        if (e == asio::error::would_block) return self->sniff();
        // A port probe, or a silent peer giving up: nothing to warn of. (Asio reports a read
        // of nothing from a stream socket as eof.)
        if (e == asio::error::eof || (!e && n == 0)) {
          self->cut_ = Cut::peer_left;
          return self->finish({});
        }
        // An error: OpenSSL meets it too, and says so as it always has.
        if (e || first == kHandshakeRecord) return self->step();
        self->refuse_plain(first);
      });
}

void TlsHandshake::step() {
  clear_ssl_errors();
  const auto outcome = ssl_outcome(ssl(), SSL_do_handshake(ssl()));
  if (outcome.kind == SslOutcome::done) return finish({});
  if (outcome.kind == SslOutcome::failed) return finish(outcome.ec);
  stream_->socket.async_wait(wait_for(outcome), [self = shared_from_this()](const error_code& ec) {
    if (ec || self->cut_ != Cut::none) return self->finish(ec);
    self->step();
  });
}

void TlsHandshake::refuse_plain(unsigned char first) {
  refused_plain_ = true;
  error_code ec;
  const auto local = stream_->socket.local_endpoint(ec);
  const std::string here = ec ? std::string("tls://HOST:PORT") : format_endpoint(local);
  spdlog::warn("tls: {} opened with byte 0x{:02x}, not a TLS handshake: a tcp:// client at a "
               "tls:// port? Told that {}",
               peer_, first, kSpeaksTlsMark);
  refusal_ = framed_refusal(fmt::format("{}: connect to {} instead, trusting its CA "
                                        "(--tls-ca-file, TASKWIRE_TLS_CA_FILE)",
                                        kSpeaksTlsMark, here));
  arm_timer(kRefusedLinger);  // in place of what was left of the handshake's timeout
  asio::async_write(stream_->socket, asio::buffer(refusal_),
                    [self = shared_from_this()](const error_code& e, std::size_t) {
                      if (e || self->cut_ != Cut::none) return self->finish(e);
                      error_code ignored;
                      self->stream_->socket.shutdown(asio::socket_base::shutdown_send, ignored);
                      self->drain();
                    });
}

// Closing with the peer's HELLO unread would reset the connection, which may destroy the
// refusal before the peer has read it: input is read until the peer closes (it does, once it
// has read the refusal), or the linger ends.
void TlsHandshake::drain() {
  refusal_.resize(1024);
  stream_->socket.async_read_some(asio::buffer(refusal_),
                                  [self = shared_from_this()](const error_code& ec, std::size_t) {
                                    if (ec || self->cut_ != Cut::none) return self->finish(ec);
                                    self->drain();
                                  });
}

void TlsHandshake::finish(const error_code& ec) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  if (!ec && cut_ == Cut::none && !refused_plain_) return done_({}, std::move(stream_));
  const auto code = failure(ec);
  error_code ignored;
  stream_->socket.close(ignored);
  done_(code, nullptr);
}

// What a failed handshake reports, said in the log (an abort at debug level only: whoever
// aborted it says why).
error_code TlsHandshake::failure(const error_code& ec) {
  const char* who = side_ == asio::ssl::stream_base::client ? "with" : "from";
  if (refused_plain_) return make_error_code(tls_errc::not_tls);  // said in refuse_plain
  if (cut_ == Cut::aborted) {
    spdlog::debug("tls: TLS handshake {} {} aborted", who, peer_);
    return make_error_code(errc::aborted);
  }
  if (cut_ == Cut::peer_left) {
    spdlog::debug("tls: {} closed the connection before any TLS handshake", peer_);
    return make_error_code(errc::closed);
  }
  if (cut_ == Cut::timed_out) {
    spdlog::warn("tls: TLS handshake {} {} did not finish in time", who, peer_);
    return make_error_code(errc::timeout);
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
  return code;
}

void async_tls_handshake(std::unique_ptr<TlsStream> stream, TlsHandshake::Side side,
                         std::chrono::milliseconds timeout, std::string peer, HandshakeDone done) {
  std::make_shared<TlsHandshake>(std::move(stream), side, std::move(peer))
      ->start(timeout, std::move(done));
}

}  // namespace taskwire::comm::tls
