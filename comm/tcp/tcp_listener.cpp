#include <taskwire/comm/tcp/tcp_listener.hpp>

#include <taskwire/comm/tcp/tcp_comm.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <mutex>

namespace taskwire::comm::tcp {
namespace {

using asio::ip::tcp;

constexpr std::chrono::milliseconds kAcceptRetryDelay{100};

tcp::endpoint resolve_listen_endpoint(asio::io_context& io, const HostPort& where,
                                      const std::string& requested) {
  error_code ec;
  const auto ip = asio::ip::make_address(where.host, ec);
  if (!ec) return {ip, where.port};
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(where.host, std::to_string(where.port),
                                        tcp::resolver::numeric_service, ec);
  if (ec || results.empty())
    throw CommError(make_error_code(errc::bad_address),
                    fmt::format("cannot listen at {}: host '{}' does not resolve{}", requested,
                                where.host, ec ? ": " + ec.message() : std::string()));
  for (const auto& r : results)
    if (r.endpoint().address().is_v4()) return r.endpoint();
  return results.begin()->endpoint();
}

// For a wildcard bind: an address of this host that other hosts can use, as Dask does with
// gethostbyname(gethostname()); loopback when the host name gives nothing better.
asio::ip::address contact_host(asio::io_context& io, const asio::ip::address& bound) {
  if (!bound.is_unspecified()) return bound;
  error_code ec;
  const auto name = asio::ip::host_name(ec);
  if (!ec) {
    tcp::resolver resolver(io);
    const auto results =
        resolver.resolve(bound.is_v4() ? tcp::v4() : tcp::v6(), name, "0",
                         tcp::resolver::numeric_service, ec);
    if (!ec)
      for (const auto& r : results) {
        const auto a = r.endpoint().address();
        if (!a.is_loopback() && !a.is_unspecified()) return a;
      }
  }
  if (bound.is_v4()) return asio::ip::address_v4::loopback();
  return asio::ip::address_v6::loopback();
}

}  // namespace

struct TcpListener::State : std::enable_shared_from_this<State> {
  State(asio::io_context& io_, SocketAcceptHandler on_socket_)
      : io(io_), acceptor(io_), retry(io_), on_socket(std::move(on_socket_)) {}

  void accept_next() {  // mu held
    acceptor.async_accept(asio::make_strand(io),
                          [self = shared_from_this()](const error_code& ec, Socket socket) {
                            self->on_accept(ec, std::move(socket));
                          });
  }

  void on_accept(const error_code& ec, Socket socket) {
    std::lock_guard lock(mu);
    if (stopped) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // E.g. out of file descriptors: retrying at once would spin.
      spdlog::warn("tcp: accept on {} failed: {}; retrying in {} ms", address, ec.message(),
                   kAcceptRetryDelay.count());
      retry.expires_after(kAcceptRetryDelay);
      retry.async_wait([self = shared_from_this()](const error_code& e) {
        std::lock_guard l(self->mu);
        if (!e && !self->stopped) self->accept_next();
      });
      return;
    }
    accept_next();
    on_socket(std::move(socket));
  }

  std::recursive_mutex mu;  // recursive: on_socket may stop the listener
  asio::io_context& io;
  tcp::acceptor acceptor;
  asio::steady_timer retry;
  SocketAcceptHandler on_socket;
  std::string address;
  bool stopped = false;
};

TcpListener::TcpListener(asio::io_context& io, const Address& address,
                         const runtime::Limits& limits, RawAcceptHandler on_comm)
    : TcpListener(io, address, [limits, on_comm = std::move(on_comm)](Socket socket) {
        on_comm(std::make_shared<TcpComm>(std::move(socket), limits));
      }) {}

TcpListener::TcpListener(asio::io_context& io, const Address& address,
                         SocketAcceptHandler on_socket)
    : state_(std::make_shared<State>(io, std::move(on_socket))),
      where_(HostPort::parse(address.location)), requested_(address.str()) {
  state_->address = requested_;
}

TcpListener::~TcpListener() { stop(); }

void TcpListener::start() {
  std::lock_guard lock(state_->mu);
  if (state_->stopped)
    throw CommError(make_error_code(errc::io),
                    fmt::format("the listener at {} was stopped; make a new one", requested_));
  auto& acceptor = state_->acceptor;
  if (acceptor.is_open()) return;
  const auto endpoint = resolve_listen_endpoint(state_->io, where_, requested_);
  error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  tcp::endpoint bound;
  if (!ec) bound = acceptor.local_endpoint(ec);
  if (ec) {
    error_code ignored;
    acceptor.close(ignored);
    throw CommError(make_error_code(errc::io),
                    fmt::format("cannot listen at {}: {}", requested_, ec.message()));
  }
  listen_address_ = format_endpoint(bound);
  contact_address_ =
      format_endpoint(tcp::endpoint(contact_host(state_->io, bound.address()), bound.port()));
  state_->address = listen_address_;
  state_->accept_next();
  spdlog::debug("tcp: listening at {} (contact {})", listen_address_, contact_address_);
}

void TcpListener::stop() noexcept {
  try {
    std::lock_guard lock(state_->mu);
    if (state_->stopped) return;
    state_->stopped = true;
    error_code ignored;
    state_->acceptor.close(ignored);
    state_->retry.cancel();
  } catch (const std::exception& e) {
    spdlog::error("tcp: stopping the listener at {}: {}", requested_, e.what());
  }
}

std::string TcpListener::listen_address() const {
  return listen_address_.empty() ? requested_ : listen_address_;
}

std::string TcpListener::contact_address() const {
  return contact_address_.empty() ? requested_ : contact_address_;
}

}  // namespace taskwire::comm::tcp
