#pragma once
// TcpListener: accepts TCP connections at tcp://HOST:PORT and hands each one, as a raw TcpComm
// (no handshake yet), to the accept handler. Binds exactly the host it is given (a name is
// resolved once, preferring IPv4); a wildcard is bound only when asked for (tcp://0.0.0.0:P).
// Port 0 picks a free port. SO_REUSEADDR is set; the backlog is the system's maximum.
//
// Thread-safety: start(), stop() and the accept handler are serialised by a mutex, and the
// handler runs under it, so once stop() has returned the handler is never called again.
// The runtime::Context must outlive the listener.
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/comm/tcp/tcp_comm.hpp>
#include <taskwire/runtime/config.hpp>

#include <functional>
#include <memory>
#include <string>

namespace taskwire::comm::tcp {

/// Gets each accepted socket (on its own strand), under the listener's mutex.
using SocketAcceptHandler = std::function<void(Socket)>;

class TcpListener final : public Listener {
 public:
  /// Created stopped. Throws CommError(bad_address) if `address` is not tcp://HOST:PORT.
  /// Accepted comms get `limits`; `on_comm` runs on one of the context's threads.
  TcpListener(asio::io_context& io, const Address& address, const runtime::Limits& limits,
              RawAcceptHandler on_comm);
  /// The same, handing over the accepted sockets themselves, for backends that speak over
  /// TCP (tls://). `address`'s location is HOST:PORT whatever its scheme.
  TcpListener(asio::io_context& io, const Address& address, SocketAcceptHandler on_socket);
  ~TcpListener() override;

  /// Synchronous: resolves, binds, listens, starts accepting. Idempotent while running.
  /// Throws CommError: bad_address (host does not resolve), io (e.g. address in use).
  void start() override;
  /// Synchronous, idempotent: closes the listening socket; accepted comms stay open.
  void stop() noexcept override;
  /// As bound, port resolved, e.g. tcp://0.0.0.0:41234 (the requested address before start()).
  std::string listen_address() const override;
  /// Concrete: a wildcard host is replaced by an address the host name resolves to (not a
  /// loopback one), or by loopback when it resolves to none.
  std::string contact_address() const override;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with pending accepts, so it outlives this object
  HostPort where_;
  std::string requested_;
  std::string listen_address_, contact_address_;
};

}  // namespace taskwire::comm::tcp
