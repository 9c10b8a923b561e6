#pragma once
// tls:// : TLS (OpenSSL, driven on the socket by tls_io.hpp) over the TCP backend's sockets,
// framed as comm/core/framing.hpp says, with the context's configured limits. Addresses are
// tls://HOST:PORT. Certificates come from runtime::Config's tls_* files (tls_context.hpp
// says what each side presents and verifies); a listener needs a certificate and key. A
// listener counts each connection in its TLS handshake against RawListenOptions::pending, and
// answers a peer that does not open with TLS in plain framing (tls_handshake.hpp).
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/runtime/context.hpp>

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <mutex>

namespace taskwire::comm::tls {

class TlsBackend final : public Backend {
 public:
  /// The context must outlive the backend and everything it makes.
  explicit TlsBackend(runtime::Context& context) : context_(context) {}
  std::string_view scheme() const noexcept override { return "tls"; }
  /// Throws CommError(tls_errc::config) naming the file when the configured ones are
  /// unusable (each call retries until they are).
  std::unique_ptr<Connector> make_connector() override;
  /// Throws CommError(tls_errc::config) naming the file, or saying a certificate is needed.
  std::unique_ptr<Listener> make_listener(const Address& address,
                                          RawAcceptHandler on_comm,
                                          const RawListenOptions& options) override;

 private:
  runtime::Context& context_;
  std::mutex mu_;
  std::shared_ptr<asio::ssl::context> client_context_;  // made on first use, then shared
};

}  // namespace taskwire::comm::tls
