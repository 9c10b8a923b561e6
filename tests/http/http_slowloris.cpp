// A slowloris at an HTTP port, then liveness probes (dashboard_test.sh slowloris; the figures
// in docs/dashboard.md).
//   http_slowloris HOST PORT CLIENTS PROBES PROBE_TIMEOUT_MS [RECONNECT_MS]
// CLIENTS connections each send the start of a GET, then one more header line a second, and
// never end the request; one the server closes is opened again RECONNECT_MS later (default
// 1000, a slowloris's next round; 0: at once, the harshest). Once every client has
// connected, PROBES GETs of /health go one after another, each given PROBE_TIMEOUT_MS. Prints
// each probe's status and time, and a summary; exits 0 only if every probe got 200.
#include <taskwire/runtime/asio.hpp>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace taskwire;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
namespace bhttp = boost::beast::http;

namespace {

std::atomic<long> g_connected{0};  // connections the slow clients opened, in all
std::chrono::milliseconds g_reconnect{1000};

// One slow client, on the io_context's one thread. Each connection is a generation: the
// handlers of a closed one find a newer generation and stop.
class SlowClient : public std::enable_shared_from_this<SlowClient> {
 public:
  SlowClient(asio::io_context& io, tcp::endpoint server)
      : socket_(io), timer_(io), server_(server) {}

  void open() {
    const unsigned gen = ++gen_;
    error_code ignored;
    socket_.close(ignored);
    timer_.cancel();
    socket_.async_connect(server_, [self = shared_from_this(), gen](error_code ec) {
      if (gen != self->gen_) return;
      if (ec) return self->reopen_later(gen, std::chrono::milliseconds(10));  // backlog full
      ++g_connected;
      self->watch(gen);
      self->send(gen, "GET /health HTTP/1.1\r\nHost: slowloris\r\n");
    });
  }

 private:
  // A close by the server shows as the end of a read, however long the next line waits.
  void watch(unsigned gen) {
    socket_.async_read_some(asio::buffer(sink_),
                            [self = shared_from_this(), gen](error_code, std::size_t) {
                              if (gen != self->gen_) return;
                              if (g_reconnect.count() == 0) return self->open();
                              self->reopen_later(gen, g_reconnect);
                            });
  }

  void send(unsigned gen, std::string text) {
    line_ = std::move(text);
    asio::async_write(socket_, asio::buffer(line_),
                      [self = shared_from_this(), gen](error_code ec, std::size_t) {
                        if (ec || gen != self->gen_) return;  // the read sees the close
                        self->timer_.expires_after(std::chrono::seconds(1));
                        self->timer_.async_wait([self, gen](error_code e) {
                          if (!e && gen == self->gen_) self->send(gen, "X-Slow: yes\r\n");
                        });
                      });
  }

  void reopen_later(unsigned gen, std::chrono::milliseconds after) {
    timer_.expires_after(after);
    timer_.async_wait([self = shared_from_this(), gen](error_code ec) {
      if (!ec && gen == self->gen_) self->open();
    });
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  tcp::endpoint server_;
  std::string line_;
  char sink_[512];
  unsigned gen_ = 0;
};

// One GET /health; its status (0: no reply in time) and milliseconds.
std::pair<unsigned, double> probe(const tcp::endpoint& server, std::chrono::milliseconds timeout) {
  asio::io_context io;
  boost::beast::tcp_stream stream(io);
  const auto t0 = Clock::now();
  stream.expires_after(timeout);
  unsigned status = 0;
  error_code ec;
  stream.async_connect(server, [&](error_code e) {
    if (e) return;
    auto request = std::make_shared<bhttp::request<bhttp::empty_body>>(bhttp::verb::get,
                                                                        "/health", 11);
    request->set(bhttp::field::host, "probe");
    bhttp::async_write(stream, *request, [&, request](error_code e2, std::size_t) {
      if (e2) return;
      auto buffer = std::make_shared<boost::beast::flat_buffer>();
      auto response = std::make_shared<bhttp::response<bhttp::string_body>>();
      bhttp::async_read(stream, *buffer, *response,
                        [&, buffer, response](error_code e3, std::size_t) {
                          if (!e3) status = response->result_int();
                        });
    });
  });
  io.run();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return {status, ms};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr, "usage: http_slowloris HOST PORT CLIENTS PROBES PROBE_TIMEOUT_MS "
                         "[RECONNECT_MS]\n");
    return 2;
  }
  if (argc == 7) g_reconnect = std::chrono::milliseconds(std::stoi(argv[6]));
  const tcp::endpoint server(asio::ip::make_address(argv[1]),
                             static_cast<unsigned short>(std::stoi(argv[2])));
  const int clients = std::stoi(argv[3]), probes = std::stoi(argv[4]);
  const std::chrono::milliseconds timeout(std::stoi(argv[5]));

  asio::io_context io;
  auto work = asio::make_work_guard(io);
  for (int i = 0; i < clients; ++i) std::make_shared<SlowClient>(io, server)->open();
  std::thread slow_thread([&] { io.run(); });
  for (int i = 0; i < 300 && g_connected < clients; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  fmt::print("{} slow clients opened {} connections\n", clients, g_connected.load());

  int answered = 0;
  std::vector<double> times;
  for (int i = 0; i < probes; ++i) {
    const auto [status, ms] = probe(server, timeout);
    fmt::print("probe {}: {} in {:.1f} ms ({} connections opened so far)\n", i + 1,
               status ? std::to_string(status) : "no reply", ms, g_connected.load());
    answered += status == 200;
    times.push_back(ms);
  }
  const long opened = g_connected.load();
  io.stop();
  slow_thread.join();
  std::sort(times.begin(), times.end());
  fmt::print("/health answered {} of {} (each given {} ms); median {:.1f} ms, max {:.1f} ms; "
             "the slow clients opened {} connections in all\n",
             answered, probes, timeout.count(), times.empty() ? 0.0 : times[times.size() / 2],
             times.empty() ? 0.0 : times.back(), opened);
  std::fflush(stdout);
  return answered == probes ? 0 : 1;
}
