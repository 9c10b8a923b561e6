#include <taskwire/http/http_server.hpp>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <optional>
#include <stdexcept>

namespace taskwire::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

struct HttpServer::Shared {
  Shared(asio::any_io_executor ex, HttpServerOptions o, HttpHandler h)
      : executor(ex), options(std::move(o)), handler(std::move(h)),
        strand(asio::make_strand(ex)), acceptor(strand) {}

  asio::any_io_executor executor;
  HttpServerOptions options;
  HttpHandler handler;
  asio::strand<asio::any_io_executor> strand;  // the acceptor's
  tcp::acceptor acceptor;
  std::atomic<std::size_t> connections{0};
};

namespace {

// One connection, on its own strand; every handler holds `self`, so it lives as long as an
// operation (or the request handler's answer) is pending.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket&& socket, std::shared_ptr<HttpServer::Shared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {}
  ~Connection() { shared_->connections.fetch_sub(1, std::memory_order_relaxed); }

  void start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

 private:
  void read() {
    const auto& o = shared_->options;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(o.header_limit));
    parser_->body_limit(o.body_limit);
    stream_.expires_after(o.request_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(error_code ec) {
    if (ec == bhttp::error::header_limit)
      return write({431, "text/plain; charset=utf-8", "request header fields too large\n"});
    if (ec == bhttp::error::body_limit)
      return write({413, "text/plain; charset=utf-8", "payload too large\n"});
    // A parse error answers 400; a timeout or a closed socket just ends the connection.
    if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
        ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message)
      return write({400, "text/plain; charset=utf-8", "bad request\n"});
    if (ec) return;
    const auto& req = parser_->get();
    if (req.method() != bhttp::verb::get)
      return write({405, "text/plain; charset=utf-8", "only GET is served\n"});
    HttpRequest request{std::string(req.method_string()), std::string(req.target())};
    auto self = shared_from_this();
    shared_->handler(request, [self](HttpResponse response) {
      asio::post(self->stream_.get_executor(),
                 [self, r = std::move(response)]() mutable { self->write(std::move(r)); });
    });
  }

  void write(HttpResponse r) {
    response_.version(11);
    response_.result(r.status);
    response_.set(bhttp::field::server, "taskwire");
    response_.set(bhttp::field::content_type, r.content_type);
    response_.set(bhttp::field::cache_control, "no-store");
    response_.keep_alive(false);
    response_.body() = std::move(r.body);
    response_.prepare_payload();
    stream_.expires_after(shared_->options.request_timeout);
    bhttp::async_write(stream_, response_, [self = shared_from_this()](error_code, std::size_t) {
      error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bhttp::response<bhttp::string_body> response_;
  std::shared_ptr<HttpServer::Shared> shared_;
};

void accept_next(const std::shared_ptr<HttpServer::Shared>& shared) {
  shared->acceptor.async_accept(
      asio::make_strand(shared->executor), [shared](error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !shared->acceptor.is_open()) return;
        if (!ec) {
          // Past the cap the socket closes at once: a flood of connections costs the daemon
          // an accept each, never memory or a handler on its strand.
          if (shared->connections.fetch_add(1, std::memory_order_relaxed) <
              shared->options.max_connections)
            std::make_shared<Connection>(std::move(socket), shared)->start();
          else
            shared->connections.fetch_sub(1, std::memory_order_relaxed);
        } else {
          spdlog::debug("http: accept failed: {}", ec.message());
        }
        accept_next(shared);
      });
}

void bind(tcp::acceptor& acceptor, const tcp::endpoint& endpoint) {
  acceptor.open(endpoint.protocol());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
}

}  // namespace

HttpServerOptions parse_listen_address(const std::string& address, HttpServerOptions o) {
  const auto colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  if (colon == std::string::npos && !address.empty() &&
      address.find_first_not_of("0123456789") == std::string::npos)
    std::swap(host, port);  // "8787": a port alone
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  o.host = host.empty() ? "127.0.0.1" : host;
  o.port = 0;
  if (!port.empty()) {
    std::size_t used = 0;
    unsigned long value = 0;
    try {
      value = std::stoul(port, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != port.size() || value > 65535)
      throw std::invalid_argument(fmt::format("bad port in '{}'", address));
    o.port = static_cast<unsigned short>(value);
  }
  return o;
}

HttpServer::HttpServer(asio::any_io_executor executor, HttpServerOptions options,
                       HttpHandler handler)
    : shared_(std::make_shared<Shared>(executor, std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  auto& o = shared_->options;
  const auto ip = asio::ip::make_address(o.host);
  try {
    bind(shared_->acceptor, {ip, o.port});
  } catch (const boost::system::system_error& e) {
    if (!o.fall_back_to_free_port || o.port == 0 || e.code() != asio::error::address_in_use)
      throw;
    spdlog::warn("http: port {} on {} is already in use; listening on a free port instead",
                 o.port, o.host);
    shared_->acceptor.close();
    bind(shared_->acceptor, {ip, 0});
  }
  port_ = shared_->acceptor.local_endpoint().port();
  asio::dispatch(shared_->strand, [shared = shared_] { accept_next(shared); });
}

void HttpServer::stop() {
  asio::dispatch(shared_->strand, [shared = shared_] {
    error_code ignored;
    shared->acceptor.close(ignored);
  });
}

std::string HttpServer::url() const {
  const auto& host = shared_->options.host;
  return host.find(':') == std::string::npos ? fmt::format("http://{}:{}", host, port_)
                                             : fmt::format("http://[{}]:{}", host, port_);
}

}  // namespace taskwire::http
