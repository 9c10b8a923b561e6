#pragma once
// The TLS handshake of a new connection, client or server side, bounded by a timeout (a
// peer that connects and says nothing must not hold a socket for ever). A failure is logged
// at warn level with the peer's address and OpenSSL's reason, and reported as a tls_errc
// (tls_error.hpp), errc::timeout, or what the socket said.
#include <taskwire/comm/tls/tls_io.hpp>

#include <boost/asio/ssl/stream_base.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace taskwire::comm::tls {

/// Runs on the socket's strand; gets the stream back on success.
using HandshakeDone = std::function<void(error_code, std::unique_ptr<TlsStream>)>;

/// `peer` names the other end in the log ("tls://127.0.0.1:8786").
void async_tls_handshake(std::unique_ptr<TlsStream> stream,
                         asio::ssl::stream_base::handshake_type side,
                         std::chrono::milliseconds timeout, std::string peer, HandshakeDone done);

}  // namespace taskwire::comm::tls
