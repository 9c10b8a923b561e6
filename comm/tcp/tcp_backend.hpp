#pragma once
// tcp:// : Boost.Asio TCP sockets (TCP_NODELAY, SO_KEEPALIVE), framed as comm/core/framing.hpp
// says, with the context's configured limits. Addresses are tcp://HOST:PORT.
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/runtime/context.hpp>

namespace taskwire::comm::tcp {

class TcpBackend final : public Backend {
 public:
  /// The context must outlive the backend and everything it makes.
  explicit TcpBackend(runtime::Context& context) : context_(context) {}
  std::string_view scheme() const noexcept override { return "tcp"; }
  std::unique_ptr<Connector> make_connector() override;
  std::unique_ptr<Listener> make_listener(const Address& address,
                                          RawAcceptHandler on_comm,
                                          const RawListenOptions& options) override;

 private:
  runtime::Context& context_;
};

}  // namespace taskwire::comm::tcp
