#include <taskwire/comm/tcp/tcp_backend.hpp>

#include <taskwire/comm/tcp/tcp_connector.hpp>
#include <taskwire/comm/tcp/tcp_listener.hpp>

namespace taskwire::comm::tcp {

std::unique_ptr<Connector> TcpBackend::make_connector() {
  return std::make_unique<TcpConnector>(context_.io(), context_.config().limits);
}

std::unique_ptr<Listener> TcpBackend::make_listener(const Address& address,
                                                    RawAcceptHandler on_comm,
                                                    const RawListenOptions&) {
  return std::make_unique<TcpListener>(context_.io(), address, context_.config().limits,
                                       std::move(on_comm));
}

}  // namespace taskwire::comm::tcp
