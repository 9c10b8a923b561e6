#include "bench/bandwidth.hpp"

#include "bench/rank_pair.hpp"
#include "bench/raw_tcp.hpp"
#include "bench/stats.hpp"
#include "bench/tls_files.hpp"

#include <taskwire/comm/core/connect.hpp>

#include <boost/endian/conversion.hpp>
#include <unistd.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace taskwire::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The window header: how many data messages follow and their size; count 0 ends the stream.
struct WindowHeader {
  std::uint64_t count = 0, bytes = 0;
};

std::vector<char> encode(WindowHeader h) {
  std::vector<char> out(16);
  const std::uint64_t v[2] = {boost::endian::native_to_little(h.count),
                              boost::endian::native_to_little(h.bytes)};
  std::memcpy(out.data(), v, 16);
  return out;
}

WindowHeader decode(const char* p, std::size_t n) {
  if (n != 16) throw std::runtime_error(fmt::format("bandwidth: header of {} bytes, not 16", n));
  std::uint64_t v[2];
  std::memcpy(v, p, 16);
  return {boost::endian::little_to_native(v[0]), boost::endian::little_to_native(v[1])};
}

struct BandwidthRow {
  std::string backend;
  std::size_t bytes = 0, window = 0, messages = 0;
  double seconds = 0;
  double gb_per_s() const { return seconds > 0 ? 1e-9 * bytes * messages / seconds : 0; }
};

std::size_t window_for(const BandwidthOptions& o, std::size_t bytes) {
  return std::clamp<std::size_t>(o.window_bytes / std::max<std::size_t>(bytes, 1), 2, 64);
}

// One warm-up window, then windows until the budget is spent (at least min_windows).
// `send_window(n)` sends n messages and returns once the receiver acknowledged them.
template <class SendWindow>
BandwidthRow stream(const BandwidthOptions& o, const std::string& backend, std::size_t bytes, SendWindow&& send_window) {
  BandwidthRow r;
  r.backend = backend;
  r.bytes = bytes;
  r.window = window_for(o, bytes);
  send_window(r.window);
  const auto t0 = Clock::now();
  for (std::size_t w = 0; w < o.min_windows || r.seconds < o.seconds_per_size; ++w) {
    send_window(r.window);
    r.messages += r.window;
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  return r;
}

// Rank 1's side of a comm stream: header, `count` messages (each checked), one ack; again.
struct CommSink : std::enable_shared_from_this<CommSink> {
  comm::CommPtr comm;
  WindowHeader window;
  std::uint64_t left = 0;

  void read_header() {
    comm->async_read([self = shared_from_this()](error_code ec, runtime::Message m) {
      if (ec) return;  // rank 0 closed the comm: the stream is over
      if (m.frames.size() != 1) return self->comm->abort();
      self->window = decode(m.frames[0].data(), m.frames[0].size());
      self->left = self->window.count;
      if (self->left == 0) return self->comm->close();
      self->read_data();
    });
  }
  void read_data() {
    comm->async_read([self = shared_from_this()](error_code ec, runtime::Message m) {
      if (ec) return;
      if (m.total_bytes() != self->window.bytes) return self->comm->abort();  // fails the sender's ack read
      if (--self->left > 0) return self->read_data();
      self->comm->async_write(runtime::Message({runtime::Frame(std::string_view("ack"))}), [](error_code) {});
      self->read_header();
    });
  }
};

// Rank 0's side of one comm window: `n` writes of the same message (frames are shared, never
// copied), then the ack. Not pingpong's stream_one_way: that allocates a fresh frame per call,
// and above glibc's mmap threshold (32 MiB) each fresh frame costs page faults that a sender
// reusing its buffer does not pay (raw-tcp and raw-mpi reuse theirs).
void send_comm_window(const comm::CommPtr& c, const runtime::Message& data, std::size_t n) {
  c->async_write(runtime::Message({runtime::Frame(encode({n, data.total_bytes()}))}), [](error_code) {});
  for (std::size_t i = 0; i < n; ++i) c->async_write(data, [](error_code) {});
  std::promise<void> acked;
  c->async_read([&acked](error_code ec, runtime::Message) {
    if (ec) acked.set_exception(std::make_exception_ptr(comm::CommError(ec, "bandwidth: no ack")));
    else acked.set_value();
  });
  acked.get_future().get();
}

std::vector<BandwidthRow> comm_backend(RankPair& pair, const BandwidthOptions& o, const std::string& backend) {
  const std::string contact = pair.listen_on_server(
      backend == "mpi" ? "mpi://1" : backend + "://" + pair.tcp_host() + ":0", [](comm::CommPtr c) {
        auto sink = std::make_shared<CommSink>();
        sink->comm = std::move(c);
        sink->read_header();
      });
  std::vector<BandwidthRow> rows;
  if (pair.measures()) {
    auto c = comm::connect(pair.registry(), contact);
    for (auto bytes : o.sizes) {
      auto frame = runtime::Frame::allocate(bytes);
      std::memset(frame.mutable_data(), 'x', bytes);
      const runtime::Message data({frame});
      rows.push_back(stream(o, backend, bytes, [&](std::size_t n) { send_comm_window(c, data, n); }));
    }
    c->close();
  }
  pair.barrier();
  return rows;
}

std::vector<BandwidthRow> raw_tcp_backend(RankPair& pair, const BandwidthOptions& o) {
  std::unique_ptr<RawTcpAcceptor> acceptor;
  if (pair.serves()) acceptor = std::make_unique<RawTcpAcceptor>(pair.tcp_host());
  const auto contact = pair.pass_string(1, 0, acceptor ? acceptor->contact() : "");
  std::vector<BandwidthRow> rows;
  if (pair.serves()) {
    auto sock = acceptor->accept();
    std::vector<char> header, data, ack(3, 'a');  // two buffers: no re-zeroing between sizes
    while (sock.recv_message(header)) {
      const auto h = decode(header.data(), header.size());
      if (h.count == 0) break;
      for (std::uint64_t i = 0; i < h.count; ++i)
        if (!sock.recv_message(data) || data.size() != h.bytes)
          throw std::runtime_error("raw-tcp: short stream");
      sock.send_message(ack);
    }
  } else if (pair.measures()) {
    auto sock = RawTcpSocket::connect(contact);
    std::vector<char> reply;
    for (auto bytes : o.sizes) {
      const std::vector<char> data(bytes, 'x');
      rows.push_back(stream(o, "raw-tcp", bytes, [&](std::size_t n) {
        sock.send_message(encode({n, bytes}));
        for (std::size_t i = 0; i < n; ++i) sock.send_message(data);
        if (!sock.recv_message(reply)) throw std::runtime_error("raw-tcp: no ack");
      }));
    }
    sock.send_message(encode({0, 0}));
  }
  pair.barrier();
  return rows;
}

// Plain MPI on MPI_COMM_WORLD, holding the runtime's MPI mutex throughout (the level is
// SERIALIZED, so the poller must not call MPI meanwhile). Blocking calls spin here, which is
// what a plain MPI program does; only ranks 0 and 1 take part.
constexpr int kHeaderTag = 91, kDataTag = 92, kAckTag = 93;

std::vector<BandwidthRow> raw_mpi_backend(RankPair& pair, const BandwidthOptions& o) {
  std::vector<BandwidthRow> rows;
  if (pair.rank() > 1) return rows;
  std::lock_guard lock(*pair.env().mutex());
  std::uint64_t h[2] = {0, 0};
  char ack = 0;
  if (pair.serves()) {
    std::vector<std::vector<char>> buffers;  // one per message in flight: MPI forbids shared receive buffers
    std::vector<MPI_Request> reqs;
    for (;;) {
      MPI_Recv(h, 2, MPI_UINT64_T, 0, kHeaderTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (h[0] == 0) break;
      if (buffers.size() < h[0] || buffers[0].size() != h[1]) buffers.assign(h[0], std::vector<char>(h[1]));
      reqs.resize(h[0]);
      for (std::uint64_t i = 0; i < h[0]; ++i)
        MPI_Irecv(buffers[i].data(), static_cast<int>(h[1]), MPI_BYTE, 0, kDataTag, MPI_COMM_WORLD, &reqs[i]);
      MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
      MPI_Send(&ack, 1, MPI_CHAR, 0, kAckTag, MPI_COMM_WORLD);
    }
    return rows;
  }
  for (auto bytes : o.sizes) {
    if (bytes > static_cast<std::size_t>(INT32_MAX)) throw std::runtime_error("raw-mpi: messages above 2 GiB");
    const std::vector<char> data(bytes, 'x');
    std::vector<MPI_Request> reqs;
    rows.push_back(stream(o, "raw-mpi", bytes, [&](std::size_t n) {
      h[0] = n;
      h[1] = bytes;
      MPI_Send(h, 2, MPI_UINT64_T, 1, kHeaderTag, MPI_COMM_WORLD);
      reqs.resize(n);
      for (std::size_t i = 0; i < n; ++i)
        MPI_Isend(data.data(), static_cast<int>(bytes), MPI_BYTE, 1, kDataTag, MPI_COMM_WORLD, &reqs[i]);
      MPI_Waitall(static_cast<int>(n), reqs.data(), MPI_STATUSES_IGNORE);
      MPI_Recv(&ack, 1, MPI_CHAR, 1, kAckTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }));
  }
  h[0] = h[1] = 0;
  MPI_Send(h, 2, MPI_UINT64_T, 1, kHeaderTag, MPI_COMM_WORLD);
  return rows;
}

void print(const BandwidthOptions& o, const std::vector<BandwidthRow>& rows) {
  CsvWriter csv(o.csv, "backend,bytes,messages,seconds,gb_per_s");
  std::map<std::pair<std::string, std::size_t>, double> gbs;
  fmt::print("{:<8} {:>8} {:>7} {:>9} {:>9} {:>9}\n", "backend", "size", "window", "messages", "seconds", "GB/s");
  for (const auto& r : rows) {
    csv.row(fmt::format("{},{},{},{:.6f},{:.4f}", r.backend, r.bytes, r.messages, r.seconds, r.gb_per_s()));
    fmt::print("{:<8} {:>8} {:>7} {:>9} {:>9.3f} {:>9.3f}\n", r.backend, human_bytes(r.bytes), r.window,
               r.messages, r.seconds, r.gb_per_s());
    gbs[{r.backend, r.bytes}] = r.gb_per_s();
  }
  const std::pair<const char*, const char*> ratios[] = {
      {"mpi", "tcp"}, {"mpi", "raw-mpi"}, {"tcp", "raw-tcp"}, {"tls", "tcp"}};
  for (auto [a, b] : ratios) {
    std::string line;
    for (auto bytes : o.sizes)
      if (gbs.count({a, bytes}) && gbs.count({b, bytes}) && gbs[{b, bytes}] > 0)
        line += fmt::format("  {} {:.2f}", human_bytes(bytes), gbs[{a, bytes}] / gbs[{b, bytes}]);
    if (!line.empty()) fmt::print("{}/{} bandwidth:{}\n", a, b, line);
  }
}

}  // namespace

std::vector<std::size_t> default_bandwidth_sizes() {
  std::vector<std::size_t> s;
  for (std::size_t n = std::size_t{64} << 10; n <= (std::size_t{64} << 20); n *= 4) s.push_back(n);
  return s;
}

int run_bandwidth(const BandwidthOptions& o) {
  for (const auto& b : o.backends)
    if (b != "mpi" && b != "tcp" && b != "tls" && b != "raw-mpi" && b != "raw-tcp")
      throw std::invalid_argument("unknown backend '" + b + "' (use mpi, raw-mpi, tcp, tls, raw-tcp)");
  // Before the pair's context reads the environment. The ranks of one mpiexec on one node are
  // children of the same launcher process, which names their one set of files.
  std::unique_ptr<BenchTlsFiles> tls_files;
  if (std::find(o.backends.begin(), o.backends.end(), "tls") != o.backends.end())
    tls_files = std::make_unique<BenchTlsFiles>(std::to_string(::getppid()));
  RankPair pair("taskwire-bench bandwidth");
  std::vector<BandwidthRow> rows;
  for (const auto& backend : o.backends) {
    std::vector<BandwidthRow> more;
    if (backend == "raw-mpi") more = raw_mpi_backend(pair, o);
    else if (backend == "raw-tcp") more = raw_tcp_backend(pair, o);
    else more = comm_backend(pair, o, backend);
    if (backend == "raw-mpi") pair.barrier();
    rows.insert(rows.end(), more.begin(), more.end());
  }
  pair.finish();
  if (pair.measures()) print(o, rows);
  return 0;
}

}  // namespace taskwire::bench
