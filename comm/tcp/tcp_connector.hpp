#pragma once
// TcpConnector: one connection attempt to tcp://HOST:PORT. A host name is resolved with an
// asynchronous resolver and every address it gives is tried in turn. No retry (the backoff
// loop is comm::async_connect's).
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/comm/tcp/tcp_comm.hpp>
#include <taskwire/runtime/config.hpp>

#include <functional>

namespace taskwire::comm::tcp {

/// Gets the connected socket (on its own strand), or the error and a closed socket.
using SocketConnectHandler = std::function<void(error_code, Socket)>;

/// What TcpConnector does, up to the connected socket, for backends that speak over TCP
/// (tls://): `address`'s location is HOST:PORT whatever its scheme. Errors as below.
void async_connect_socket(asio::io_context& io, const Address& address,
                          SocketConnectHandler handler);

class TcpConnector final : public Connector {
 public:
  /// Connected comms get `limits`. The io_context must outlive pending attempts' handlers.
  TcpConnector(asio::io_context& io, const runtime::Limits& limits) : io_(io), limits_(limits) {}

  /// Asynchronous; the handler runs on the context (the new comm's strand). Fails with
  /// refused (nothing listens), bad_address (malformed), unknown_host (the host name does not
  /// exist), dns_unavailable (the lookup failed for now), closed (reset during connect) or io
  /// (anything else, logged at debug level).
  /// The attempt owns its own state: the connector may be destroyed while it is pending.
  void async_connect(const Address& address, RawConnectHandler handler) override;

 private:
  asio::io_context& io_;
  runtime::Limits limits_;
};

}  // namespace taskwire::comm::tcp
