#include <taskwire/comm/tls/tls_error.hpp>

#include <taskwire/comm/tcp/tcp_comm.hpp>

#include <boost/asio/ssl.hpp>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

namespace taskwire::comm::tls {
namespace {

class TlsCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "taskwire.tls"; }
  std::string message(int ev) const override {
    switch (static_cast<tls_errc>(ev)) {
      case tls_errc::config:
        return "TLS configuration error: check --tls-cert, --tls-key and --tls-ca-file";
      case tls_errc::expired:
        return "TLS: certificate verify failed (certificate has expired or is not valid yet): "
               "renew the peer's certificate, or check the clocks";
      case tls_errc::untrusted:
        return "TLS: certificate verify failed (self-signed, or signed by a CA not trusted "
               "here): check --tls-ca-file (TASKWIRE_TLS_CA_FILE) and the peer's certificate";
      case tls_errc::name_mismatch:
        return "TLS: certificate verify failed (the server's certificate does not name the "
               "host connected to): check its subjectAltName (DNS name or IP address)";
      case tls_errc::no_client_cert:
        return "TLS: the server requires a client certificate (mutual TLS): give --tls-cert "
               "and --tls-key (TASKWIRE_TLS_CERT, TASKWIRE_TLS_KEY)";
      case tls_errc::rejected_by_peer:
        return "TLS: the peer rejected this end's certificate (unknown CA, bad or expired "
               "certificate): check the peer's --tls-ca-file and this end's --tls-cert";
      case tls_errc::not_tls:
        return "TLS: the peer does not speak TLS: this port does not speak TLS (a tcp:// "
               "listener: give its tcp:// address), or the peer is a plain tcp:// client";
      case tls_errc::failed: return "TLS handshake failed (the log has OpenSSL's reason)";
    }
    return "unknown TLS error";
  }
  boost::system::error_condition default_error_condition(int) const noexcept override {
    return {static_cast<int>(errc::tls), comm_category()};
  }
};

tls_errc classify_verify_result(long verify_result) {
  switch (verify_result) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return tls_errc::expired;
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_UNTRUSTED:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return tls_errc::untrusted;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return tls_errc::name_mismatch;
    default:
      return tls_errc::failed;
  }
}

// An SSL-category error by OpenSSL's reason: what the peer's alert or our own check said.
tls_errc classify_ssl_reason(int reason) {
  switch (reason) {
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return tls_errc::no_client_cert;
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
      return tls_errc::rejected_by_peer;
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_HTTP_REQUEST:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
      return tls_errc::not_tls;
    default:
      return tls_errc::failed;
  }
}

}  // namespace

const boost::system::error_category& tls_category() noexcept {
  static const TlsCategory category;
  return category;
}

error_code translate_tls_error(const error_code& ec, long verify_result, bool during_handshake) {
  if (verify_result != X509_V_OK) return make_error_code(classify_verify_result(verify_result));
  if (ec.category() == asio::error::get_ssl_category()) {
    const auto reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
    if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) return make_error_code(errc::closed);
    const auto kind = classify_ssl_reason(reason);
    if (kind != tls_errc::failed || during_handshake) return make_error_code(kind);
    return make_error_code(errc::io);
  }
  // A peer that closes without TLS's close_notify (also OpenSSL's unexpected eof above), or
  // resets. Mid-handshake that is no proof that it does not speak TLS: a listener evicts a
  // pending handshake that way (pending_handshakes.hpp), and a connect retries it. A plain
  // port says more: it sends its HELLO first, which OpenSSL reads as a wrong version.
  if (ec == asio::ssl::error::stream_truncated) return make_error_code(errc::closed);
  return tcp::translate_error(ec, "tls");
}

std::string describe_tls_error(const error_code& ec, long verify_result) {
  if (verify_result == X509_V_OK) return ec.message();
  return fmt::format("{} ({})", ec.message(), X509_verify_cert_error_string(verify_result));
}

}  // namespace taskwire::comm::tls
