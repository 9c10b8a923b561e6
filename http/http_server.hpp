#pragma once
// taskwire::http::HttpServer: a small HTTP/1.1 server (Boost.Beast) for the daemons'
// dashboard and metrics. It runs on an executor of the daemon's own io_context, each
// connection on its own strand, so a slow or hostile client never holds the scheduler's or
// the worker's strand: the handler decides where to collect its facts (typically a short
// post to the owner's strand) and answers through HttpRespond from any thread.
//
// Bounded: at most max_connections connections at once (one more closes the oldest), request
// headers past header_limit answer 431, a body past body_limit 413, a malformed request 400,
// and a client that does not send its request and read the reply within request_timeout is
// disconnected. One request per connection (the reply says Connection: close).
#include <taskwire/runtime/asio.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace taskwire::http {

struct HttpRequest {
  std::string method;  ///< "GET", "HEAD", ...
  std::string target;  ///< the path with its query string, e.g. "/json/workers?x=1"
  std::string path() const { return target.substr(0, target.find('?')); }
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

/// Sends the reply; call exactly once, from any thread.
using HttpRespond = std::function<void(HttpResponse)>;
/// Called on the connection's strand for each well-formed request.
using HttpHandler = std::function<void(const HttpRequest&, HttpRespond)>;

struct HttpServerOptions {
  /// Interface to bind: "127.0.0.1" (the default: this host only), "0.0.0.0" for every
  /// interface, or any local address.
  std::string host = "127.0.0.1";
  /// 0: any free port.
  unsigned short port = 0;
  /// When `port` is taken, log a warning and listen on a free port instead of failing
  /// (as Dask's dashboard does).
  bool fall_back_to_free_port = true;
  std::size_t header_limit = 8 * 1024;
  std::size_t body_limit = 8 * 1024;
  /// Whole request-and-reply deadline per connection.
  std::chrono::milliseconds request_timeout{10'000};
  /// Connections open at once; one more closes the oldest, so that slow or idle clients
  /// holding every slot cannot keep out a client that sends its request at once.
  std::size_t max_connections = 64;
};

/// Parses a --dashboard-address value: ":8787", "8787", "HOST:PORT" or "HOST" (port 0).
/// An empty host means 127.0.0.1. Throws std::invalid_argument for a bad port.
HttpServerOptions parse_listen_address(const std::string& address,
                                       HttpServerOptions defaults = {});

class HttpServer {
 public:
  /// Does nothing until start(). `executor` must outlive the server's connections (the
  /// io_context of a runtime::Context does).
  HttpServer(asio::any_io_executor executor, HttpServerOptions options, HttpHandler handler);
  ~HttpServer();  ///< stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds and starts accepting. Throws boost::system::system_error when it cannot bind
  /// (and, with fall_back_to_free_port, not even a free port).
  void start();
  /// Stops accepting; connections in progress finish (bounded by request_timeout). Any
  /// thread; idempotent.
  void stop();
  unsigned short port() const noexcept { return port_; }
  /// "http://HOST:PORT" as bound.
  std::string url() const;

  struct Shared;  ///< what the acceptor and the connections share (http_server.cpp)

 private:
  std::shared_ptr<Shared> shared_;
  unsigned short port_ = 0;
};

}  // namespace taskwire::http
