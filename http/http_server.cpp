#include <taskwire/http/http_server.hpp>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

namespace taskwire::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

// Named, not in an anonymous namespace: Shared (a member of an exported class) holds
// pointers to it, which -Wsubobject-linkage refuses in a unity build.
namespace server_detail {
class Connection;
}  // namespace server_detail
using server_detail::Connection;

struct HttpServer::Shared {
  Shared(asio::any_io_executor ex, HttpServerOptions o, HttpHandler h)
      : executor(ex), options(std::move(o)), handler(std::move(h)),
        strand(asio::make_strand(ex)), acceptor(strand) {}

  /// Counts `c` as open; past max_connections, returns the one to close (shed()) to make
  /// room: the oldest still reading its request, else the oldest.
  std::shared_ptr<Connection> admit(const std::shared_ptr<Connection>& c, std::uint64_t& seq);
  /// The connection has its request: it is answered, and closed only past the cap when
  /// every connection is.
  void answering(std::uint64_t seq) {
    std::lock_guard lock(mu);
    if (auto it = open.find(seq); it != open.end()) it->second.reading = false;
  }
  void closed(std::uint64_t seq) {
    std::lock_guard lock(mu);
    open.erase(seq);
  }

  struct Slot {
    std::weak_ptr<Connection> connection;
    bool reading = true;  // still reading its request
  };

  asio::any_io_executor executor;
  HttpServerOptions options;
  HttpHandler handler;
  asio::strand<asio::any_io_executor> strand;  // the acceptor's
  tcp::acceptor acceptor;
  std::mutex mu;
  std::map<std::uint64_t, Slot> open;  // mu; by age, oldest first
  std::uint64_t next_seq = 0;          // mu
  bool warned = false;                 // mu: the first shed warns
};

// One connection, on its own strand; every handler holds `self`, so it lives as long as an
// operation (or the request handler's answer) is pending.
class server_detail::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket&& socket, std::shared_ptr<HttpServer::Shared> shared)
      : stream_(std::move(socket)), shared_(std::move(shared)) {}
  ~Connection() { shared_->closed(seq_); }

  /// Counts this connection, sheds the oldest one when over the cap, and reads the request.
  void start() {
    auto oldest = shared_->admit(shared_from_this(), seq_);
    if (oldest) oldest->shed();
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); });
  }

  /// Any thread: closes the connection; what it was reading or writing ends with an error.
  void shed() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->stream_.close();
    });
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
    shared_->answering(seq_);
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
  std::uint64_t seq_ = 0;  // its age among the open connections (Shared::open)
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bhttp::response<bhttp::string_body> response_;
  std::shared_ptr<HttpServer::Shared> shared_;
};

namespace {

void accept_next(const std::shared_ptr<HttpServer::Shared>& shared) {
  shared->acceptor.async_accept(
      asio::make_strand(shared->executor), [shared](error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !shared->acceptor.is_open()) return;
        if (!ec) {
          std::make_shared<Connection>(std::move(socket), shared)->start();
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

// Past the cap the OLDEST connection still reading its request makes room, not the new one:
// slow clients that keep every slot (slowloris) would otherwise keep out a liveness probe
// arriving after them until their request timeouts. A probe sends its request at once, so it
// has it read long before as many newer connections as the cap have come, and from then on
// it is not closed while any connection is still reading. A flood thus costs the daemon an
// accept and a close each, never memory or a handler on its strand.
std::shared_ptr<Connection> HttpServer::Shared::admit(const std::shared_ptr<Connection>& c,
                                                      std::uint64_t& seq) {
  std::shared_ptr<Connection> oldest;
  bool first_shed = false;
  {
    std::lock_guard lock(mu);
    if (open.size() >= std::max<std::size_t>(1, options.max_connections)) {
      auto victim = std::find_if(open.begin(), open.end(),
                                 [](const auto& entry) { return entry.second.reading; });
      if (victim == open.end()) victim = open.begin();
      oldest = victim->second.connection.lock();  // null: it is closing already
      open.erase(victim);
      first_shed = !std::exchange(warned, true);
    }
    seq = next_seq++;
    open.emplace(seq, Slot{c, true});
  }
  if (first_shed)
    spdlog::warn("http: more than {} connections at once: closed the oldest to make room (slow "
                 "or idle clients?); further ones are logged at debug level",
                 options.max_connections);
  else if (oldest)
    spdlog::debug("http: more than {} connections at once: closed the oldest",
                  options.max_connections);
  return oldest;
}

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
