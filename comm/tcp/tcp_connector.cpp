#include <taskwire/comm/tcp/tcp_connector.hpp>

#include <taskwire/comm/tcp/tcp_comm.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::comm::tcp {
namespace {

using asio::ip::tcp;

class ConnectAttempt : public std::enable_shared_from_this<ConnectAttempt> {
 public:
  ConnectAttempt(asio::io_context& io, const runtime::Limits& limits, std::string address,
                 RawConnectHandler handler)
      : socket_(asio::make_strand(io)), resolver_(socket_.get_executor()), limits_(limits),
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
      return finish(code == errc::io ? translate_error(ec, address_) : make_error_code(code),
                    nullptr);
    }
    asio::async_connect(socket_, results,
                        [self = shared_from_this()](const error_code& e, const tcp::endpoint&) {
                          self->on_connected(e);
                        });
  }

  void on_connected(const error_code& ec) {
    if (ec) return finish(translate_error(ec, address_), nullptr);
    finish({}, std::make_shared<TcpComm>(std::move(socket_), limits_));
  }

  void finish(error_code ec, CommPtr comm) {
    auto h = std::move(handler_);
    h(ec, std::move(comm));
  }

  Socket socket_;
  tcp::resolver resolver_;
  const runtime::Limits limits_;
  std::string address_;
  RawConnectHandler handler_;
};

}  // namespace

void TcpConnector::async_connect(const Address& address, RawConnectHandler handler) {
  HostPort where;
  try {
    where = HostPort::parse(address.location);
  } catch (const CommError& e) {
    spdlog::debug("tcp: {}", e.what());
    asio::post(io_, [h = std::move(handler), code = e.code()] { h(code, nullptr); });
    return;
  }
  std::make_shared<ConnectAttempt>(io_, limits_, address.str(), std::move(handler))
      ->start(where);
}

}  // namespace taskwire::comm::tcp
