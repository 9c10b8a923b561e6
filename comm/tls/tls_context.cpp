#include <taskwire/comm/tls/tls_context.hpp>

#include <taskwire/comm/tls/tls_error.hpp>

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace taskwire::comm::tls {
namespace {

using asio::ssl::context;

constexpr const char* kTls13Suites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

[[noreturn]] void config_error(const std::string& what) {
  throw CommError(make_error_code(tls_errc::config), what);
}

// Which flag and variable set a file, for messages.
struct FileSetting {
  const char* flag;
  const char* env;
  const std::string& path;
  std::string name() const { return fmt::format("{} {} ({})", flag, path, env); }
};

// Opening it first gives the system's reason ("No such file or directory", "Permission
// denied"), which OpenSSL's own errors do not say.
void require_readable(const FileSetting& file) {
  std::ifstream in(file.path);
  if (!in) config_error(fmt::format("cannot read {}: {}", file.name(), std::strerror(errno)));
}

std::shared_ptr<context> new_context(context::method method) {
  auto ctx = std::make_shared<context>(method);
  ctx->set_options(context::default_workarounds | context::no_compression);
  if (SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1)
    config_error("cannot require TLS 1.2 or later from this OpenSSL");
  // TLS 1.3's mandatory suite first: AES-128-GCM encrypts a bulk transfer faster than
  // OpenSSL's default first choice, AES-256-GCM (docs/measurements.md, "TLS").
  if (SSL_CTX_set_ciphersuites(ctx->native_handle(), kTls13Suites) != 1)
    config_error("this OpenSSL has none of the TLS 1.3 suites " + std::string(kTls13Suites));
  return ctx;
}

void load_certificate_and_key(context& ctx, const runtime::Config& config) {
  const FileSetting cert{"--tls-cert", "TASKWIRE_TLS_CERT", config.tls_cert_file};
  const FileSetting key{"--tls-key", "TASKWIRE_TLS_KEY", config.tls_key_file};
  require_readable(cert);
  require_readable(key);
  error_code ec;
  ctx.use_certificate_chain_file(cert.path, ec);
  if (ec) config_error(fmt::format("{} is not a PEM certificate: {}", cert.name(), ec.message()));
  ctx.use_private_key_file(key.path, context::pem, ec);
  const bool mismatch =
      ec ? ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH
         : SSL_CTX_check_private_key(ctx.native_handle()) != 1;
  if (mismatch)
    config_error(fmt::format("the key in {} does not match the certificate in {}", key.name(),
                             cert.name()));
  if (ec) config_error(fmt::format("{} is not a PEM private key: {}", key.name(), ec.message()));
}

void load_ca(context& ctx, const runtime::Config& config) {
  const FileSetting ca{"--tls-ca-file", "TASKWIRE_TLS_CA_FILE", config.tls_ca_file};
  require_readable(ca);
  error_code ec;
  ctx.load_verify_file(ca.path, ec);
  if (ec) config_error(fmt::format("{} holds no PEM CA certificate: {}", ca.name(), ec.message()));
}

// The SSL ex_data slot where note_certificate_request marks a request it could not meet.
int certificate_request_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// OpenSSL's client certificate callback, set only on contexts without a certificate.
int note_certificate_request(SSL* ssl, X509**, EVP_PKEY**) {
  static char requested;
  SSL_set_ex_data(ssl, certificate_request_index(), &requested);
  return 0;  // no certificate: the handshake goes on without one
}

bool has_certificate(const runtime::Config& config) {
  if (config.tls_cert_file.empty() != config.tls_key_file.empty())
    config_error("give both --tls-cert and --tls-key (TASKWIRE_TLS_CERT, TASKWIRE_TLS_KEY), "
                 "or neither");
  return !config.tls_cert_file.empty();
}

}  // namespace

std::shared_ptr<context> make_server_context(const runtime::Config& config) {
  if (!has_certificate(config))
    config_error("listening on tls:// needs a certificate and its key: give --tls-cert and "
                 "--tls-key (TASKWIRE_TLS_CERT, TASKWIRE_TLS_KEY)");
  auto ctx = new_context(context::tls_server);
  load_certificate_and_key(*ctx, config);
  if (config.tls_ca_file.empty()) {
    ctx->set_verify_mode(asio::ssl::verify_none);
  } else {
    load_ca(*ctx, config);
    ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  }
  return ctx;
}

std::shared_ptr<context> make_client_context(const runtime::Config& config) {
  auto ctx = new_context(context::tls_client);
  if (has_certificate(config)) load_certificate_and_key(*ctx, config);
  else SSL_CTX_set_client_cert_cb(ctx->native_handle(), &note_certificate_request);
  if (config.tls_ca_file.empty()) {
    error_code ec;
    ctx->set_default_verify_paths(ec);
    if (ec) config_error("no --tls-ca-file given and the system's CA store cannot be read: " +
                         ec.message());
  } else {
    load_ca(*ctx, config);
  }
  ctx->set_verify_mode(asio::ssl::verify_peer);
  return ctx;
}

bool server_wanted_missing_certificate(SSL* ssl) {
  return SSL_get_ex_data(ssl, certificate_request_index()) != nullptr;
}

void verify_server_name(SSL* ssl, const std::string& host) {
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  error_code ec;
  asio::ip::make_address(host, ec);
  if (!ec) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
    return;
  }
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  SSL_set_tlsext_host_name(ssl, host.c_str());
}

}  // namespace taskwire::comm::tls
