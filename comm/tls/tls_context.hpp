#pragma once
// The OpenSSL contexts of the tls:// backend, made from runtime::Config's tls_* files.
// TLS 1.2 at least (1.3 preferred: OpenSSL's default maximum). Peers are always verified:
//   server: presents tls_cert_file/tls_key_file (required); with tls_ca_file, requires and
//           verifies client certificates signed by it (mutual TLS).
//   client: verifies the server against tls_ca_file (the system's CAs without one), checking
//           that its certificate names the host connected to (see verify_server_name); presents
//           tls_cert_file/tls_key_file when given.
// Every problem with the files throws CommError(tls_errc::config) naming the file and the
// flag / environment variable it came from.
#include <taskwire/runtime/asio.hpp>
#include <taskwire/runtime/config.hpp>

#include <boost/asio/ssl.hpp>

#include <memory>
#include <string>

namespace taskwire::comm::tls {

std::shared_ptr<asio::ssl::context> make_server_context(const runtime::Config& config);
std::shared_ptr<asio::ssl::context> make_client_context(const runtime::Config& config);

/// Before a client handshake: SNI and the name the server's certificate must carry. A host
/// that is an IP address must be in the certificate's IP subjectAltNames; a name must match a
/// DNS subjectAltName (or the common name when there is none), wildcards as RFC 6125 allows.
void verify_server_name(SSL* ssl, const std::string& host);

/// After a client handshake: the server asked for a certificate and this client (no
/// tls_cert_file) had none to give. Under TLS 1.3 the server's refusal would come only with
/// the first read; this lets the connect fail at once, saying so.
bool server_wanted_missing_certificate(SSL* ssl);

}  // namespace taskwire::comm::tls
