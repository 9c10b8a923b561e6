#pragma once
// The TLS handshake of a new connection, client or server side, bounded by a timeout (a
// peer that connects and says nothing must not hold a socket for ever). A failure is logged
// at warn level with the peer's address and OpenSSL's reason, and reported as a tls_errc
// (tls_error.hpp), errc::timeout, or what the socket said.
//
// The server side first looks at the peer's first byte (without taking it): a peer that does
// not open with a TLS handshake record is not speaking TLS, most likely a tcp:// client
// halfway through its HELLO. It is answered in its own terms, a taskwire refusal VERDICT in
// plain framing saying that this port speaks TLS (handshake.hpp's framed_refusal), so its
// connect fails at once with errc::tls instead of retrying until its timeout; the socket is
// then closed gracefully (bounded by kRefusedLinger) and the handshake fails with not_tls.
#include <taskwire/comm/tls/tls_io.hpp>

#include <boost/asio/ssl/stream_base.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace taskwire::comm::tls {

/// Runs on the socket's strand; gets the stream back on success.
using HandshakeDone = std::function<void(error_code, std::unique_ptr<TlsStream>)>;

/// One handshake. State confined to the socket's strand; every handler holds the object.
class TlsHandshake : public std::enable_shared_from_this<TlsHandshake> {
 public:
  using Side = asio::ssl::stream_base::handshake_type;

  /// `peer` names the other end in the log ("tls://127.0.0.1:8786"). Made with make_shared.
  TlsHandshake(std::unique_ptr<TlsStream> stream, Side side, std::string peer);

  /// Asynchronous: runs on the socket's strand, bounded by `timeout`; `done` runs there, once.
  void start(std::chrono::milliseconds timeout, HandshakeDone done);
  /// Any thread, before or after start(): ends the handshake early, which then fails with
  /// errc::aborted, logged at debug level only (whoever aborts it says why). A no-op once over.
  void abort();

 private:
  // Why it ended before OpenSSL said: its timeout, abort(), or the peer closing first.
  enum class Cut { none, timed_out, aborted, peer_left };

  SSL* ssl() const { return stream_->ssl.get(); }
  void begin(std::chrono::milliseconds timeout);
  void arm_timer(std::chrono::milliseconds after);
  void sniff();  // server: waits for the first byte, then step() or refuse_plain()
  void step();   // one SSL_do_handshake, then a wait for what it asked
  void refuse_plain(unsigned char first);
  void drain();  // after the refusal: discards input until end of stream
  void finish(const error_code& ec);
  error_code failure(const error_code& ec);

  std::unique_ptr<TlsStream> stream_;
  asio::any_io_executor executor_;  // the socket's strand
  asio::steady_timer timer_;
  std::string peer_;
  Side side_;
  HandshakeDone done_;
  std::vector<char> refusal_;  // being written to a plain peer, then the drain's buffer
  Cut cut_ = Cut::none;
  bool refused_plain_ = false;
  bool finished_ = false;
};

/// make_shared<TlsHandshake>(...)->start(...).
void async_tls_handshake(std::unique_ptr<TlsStream> stream, TlsHandshake::Side side,
                         std::chrono::milliseconds timeout, std::string peer, HandshakeDone done);

}  // namespace taskwire::comm::tls
