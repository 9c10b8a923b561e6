#pragma once
// What went wrong in TLS, as error codes of their own category whose condition is
// comm::errc::tls (so is_fatal() holds: connect() does not retry them). Each message is a
// sentence saying what to check; the connector and listener also log OpenSSL's own text
// with the peer's address.
#include <taskwire/comm/core/error.hpp>
#include <taskwire/runtime/asio.hpp>

#include <string>

namespace taskwire::comm::tls {

enum class tls_errc {
  config = 1,       ///< a certificate, key or CA file is missing, unreadable or mismatched
  expired,          ///< the peer's certificate has expired (or is not valid yet)
  untrusted,        ///< the peer's certificate is self-signed or from a CA not trusted here
  name_mismatch,    ///< the server's certificate does not name the host connected to
  no_client_cert,   ///< the server requires a client certificate (mutual TLS) and got none
  rejected_by_peer, ///< the peer refused this end's certificate (it does not trust its CA)
  not_tls,          ///< the peer does not speak TLS (a tcp:// listener, a plain client)
  failed,           ///< any other handshake failure (OpenSSL's text is in the log)
};

const boost::system::error_category& tls_category() noexcept;

inline boost::system::error_code make_error_code(tls_errc e) noexcept {
  return {static_cast<int>(e), tls_category()};
}

/// Classifies a failed TLS operation: `ec` as Asio's SSL stream reported it, `verify_result`
/// as SSL_get_verify_result() gives it (X509_V_OK when the peer's chain was not the problem).
/// Errors that are not TLS's (a reset, eof) give the tcp translation (closed, aborted, io),
/// retried by a connect; bytes that are not TLS records give not_tls.
error_code translate_tls_error(const error_code& ec, long verify_result, bool during_handshake);

/// OpenSSL's own description of `ec` and of a failed verification, for the log.
std::string describe_tls_error(const error_code& ec, long verify_result);

}  // namespace taskwire::comm::tls

template <>
struct boost::system::is_error_code_enum<taskwire::comm::tls::tls_errc> : std::true_type {};
