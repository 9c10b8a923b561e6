#include <taskwire/comm/tcp/tcp_connector.hpp>

#include <taskwire/comm/tcp/tcp_comm.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::comm::tcp {
namespace {

using asio::ip::tcp;

class ConnectAttempt : public std::enable_shared_from_this<ConnectAttempt> {
 public:
  ConnectAttempt(asio::io_context& io, std::string address, SocketConnectHandler handler)
      : socket_(asio::make_strand(io)), resolver_(socket_.get_executor()),
        address_(std::move(address)), handler_(std::move(handler)) {}

  void start(const HostPort& where) {
    error_code ec;
    const auto ip = asio::ip::make_address(where.host, ec);
    if (!ec) {
      socket_.async_connect(tcp::endpoint(ip, where.port),
                            [self = shared_from_this()](const error_code& e) {
                              self->on_connected(e);
                            });
      return;
    }
    resolver_.async_resolve(
        where.host, std::to_string(where.port), tcp::resolver::numeric_service,
        [self = shared_from_this()](const error_code& e, tcp::resolver::results_type results) {
          self->on_resolved(e, std::move(results));
        });
  }

 private:
  void on_resolved(const error_code& ec, const tcp::resolver::results_type& results) {
    if (ec) {
      spdlog::debug("tcp: cannot resolve {}: {}", address_, ec.message());
      // A name that does not exist will not start to by retrying; a failing DNS server might.
      const auto code = ec == asio::error::host_not_found ? errc::unknown_host
                        : ec == asio::error::host_not_found_try_again || ec == asio::error::no_recovery
                            ? errc::dns_unavailable
                            : errc::io;
      return finish(code == errc::io ? translate_error(ec, address_) : make_error_code(code));
    }
    asio::async_connect(socket_, results,
                        [self = shared_from_this()](const error_code& e, const tcp::endpoint&) {
                          self->on_connected(e);
                        });
  }

  void on_connected(const error_code& ec) {
    finish(ec ? translate_error(ec, address_) : error_code());
  }

  void finish(error_code ec) {
    auto h = std::move(handler_);
    h(ec, std::move(socket_));
  }

  Socket socket_;
  tcp::resolver resolver_;
  std::string address_;
  SocketConnectHandler handler_;
};

}  // namespace

void async_connect_socket(asio::io_context& io, const Address& address,
                          SocketConnectHandler handler) {
  HostPort where;
  try {
    where = HostPort::parse(address.location);
  } catch (const CommError& e) {
    spdlog::debug("{}: {}", address.scheme, e.what());
    asio::post(io, [&io, h = std::move(handler), code = e.code()] {
      h(code, Socket(asio::make_strand(io)));
    });
    return;
  }
  std::make_shared<ConnectAttempt>(io, address.str(), std::move(handler))->start(where);
}

void TcpConnector::async_connect(const Address& address, RawConnectHandler handler) {
  async_connect_socket(io_, address,
                       [limits = limits_, h = std::move(handler)](error_code ec, Socket socket) {
                         if (ec) return h(ec, nullptr);
                         h({}, std::make_shared<TcpComm>(std::move(socket), limits));
                       });
}

}  // namespace taskwire::comm::tcp
