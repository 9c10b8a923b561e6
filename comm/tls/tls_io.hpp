#pragma once
// The OpenSSL session of a tls:// connection over the TCP socket (no Asio ssl::stream and
// no BIO pair). Writes: SSL_write / SSL_do_handshake send on the non-blocking socket
// themselves, so a small message is encrypted and sent inside the write call, as TcpComm
// sends its own, and a large one goes out record after record without a handler per record.
// Reads: during the handshake OpenSSL reads the socket itself too; after it
// (read_through_buffer) the comm reads the socket with Asio and OpenSSL decrypts from that
// buffer. When a call says it must wait (SSL_ERROR_WANT_READ / WANT_WRITE) the caller reads
// the socket, or waits for it to become writable.
//
// The socket's BIO is this file's own: it sends with MSG_NOSIGNAL (a peer gone away must
// not raise SIGPIPE, as OpenSSL's socket BIO's write() would) and never closes the socket,
// which the TlsStream's tcp::Socket owns.
#include <taskwire/comm/tcp/tcp_comm.hpp>

#include <boost/asio/ssl/context.hpp>
#include <openssl/ssl.h>

#include <memory>
#include <span>

namespace taskwire::comm::tls {

struct SslFree {
  void operator()(SSL* ssl) const noexcept { SSL_free(ssl); }
};
using SslPtr = std::unique_ptr<SSL, SslFree>;

/// A TCP socket (non-blocking, on its strand) and the OpenSSL session reading and writing it.
/// Once the socket is closed the session must not be used again (its descriptor may be
/// reused by another socket).
struct TlsStream {
  tcp::Socket socket;
  SslPtr ssl;
};

/// A new session of `context` over `socket`, made non-blocking; throws CommError(io) when
/// OpenSSL cannot make one.
std::unique_ptr<TlsStream> make_tls_stream(tcp::Socket socket, asio::ssl::context& context);

/// What an SSL_* call that returned `ret` asks of its caller.
struct SslOutcome {
  enum Kind { done, want_read, want_write, failed } kind = done;
  /// For failed: the error as Asio's ssl::stream would have reported it (ssl category with
  /// OpenSSL's packed code, a system error, asio::error::eof for the peer's close_notify,
  /// asio::ssl::error::stream_truncated for an end of stream without one), the vocabulary
  /// of translate_tls_error.
  error_code ec;
};

/// Empties this thread's OpenSSL error queue, as SSL_get_error needs before an SSL_* call.
/// OpenSSL 3's ERR_clear_error frees every slot even when the queue is empty, a cost paid
/// per record; an empty queue is only peeked at.
void clear_ssl_errors() noexcept;

/// Call clear_ssl_errors() before the SSL_* call, then this right after it (same thread).
SslOutcome ssl_outcome(SSL* ssl, int ret);

/// From now on the session's reads take what the caller's own socket reads brought into the
/// session's input buffer (Asio's async_read_some waits without re-arming the descriptor, where
/// an async_wait costs an epoll_ctl), and say want_read once that is taken. The caller then
/// reads the socket into input_space() and reports with input_received() or input_failed().
/// While the last socket read filled all it was given, OpenSSL reads the socket directly
/// instead (a stream of records, no copy through the buffer) until a read comes back short. For
/// a session whose handshake has completed.
void read_through_buffer(SSL* ssl);
/// Where the next socket read goes; non-empty whenever a call has said want_read.
std::span<char> input_space(SSL* ssl);
void input_received(SSL* ssl, std::size_t n);
/// The socket read ended (asio::error::eof) or failed; later reads report it, as a recv
/// that met it would have.
void input_failed(SSL* ssl, const error_code& ec);

/// True when an SSL_read could only say want_read: nothing in the input buffer, nothing
/// buffered inside OpenSSL, and no write of its own (an alert, a key update) left to finish.
/// Saves the failing SSL_read each message would otherwise end with.
bool nothing_to_read(SSL* ssl);

/// While corked, the records OpenSSL writes collect in the session's own bounded buffer
/// instead of going to the socket one send each; a writer corks while it hands OpenSSL its
/// queued messages, then uncorks and flushes, so a large message goes out in large sends.
/// Collected records are always sent before anything written later, corked or not.
void cork(SSL* ssl, bool on);
/// Sends what was collected: done once all went, want_write when the socket is full.
SslOutcome flush(SSL* ssl);

/// The socket readiness that `outcome` (want_read or want_write) waits for.
inline asio::socket_base::wait_type wait_for(const SslOutcome& outcome) {
  return outcome.kind == SslOutcome::want_write ? asio::socket_base::wait_write
                                                : asio::socket_base::wait_read;
}

}  // namespace taskwire::comm::tls
