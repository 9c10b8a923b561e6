#include "bench/backpressure.hpp"

#include "bench/rank_pair.hpp"
#include "bench/stats.hpp"

#include <taskwire/comm/core/connect.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>

namespace taskwire::bench {
namespace {

using Clock = std::chrono::steady_clock;

/// This process's resident set now (VmRSS), in bytes.
std::uint64_t vm_rss() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

// The slow end: full speed for `calibrate` messages, which times the writer, then a pause of
// `slowdown` times that per message after each read. State is confined to the comm's strand.
struct SlowReader : std::enable_shared_from_this<SlowReader> {
  SlowReader(comm::CommPtr c, const BackpressureOptions& o)
      : comm(std::move(c)), calibrate(o.calibrate), slowdown(o.slowdown), seconds(o.seconds),
        timer(comm->executor()) {}

  void read() {
    comm->async_read([self = shared_from_this()](error_code ec, runtime::Message m) {
      if (ec) return self->done.set_value();
      self->check_order(m);
      self->on_message(m.total_bytes());
    });
  }

  // The writer fills message i with the byte i % 256.
  void check_order(const runtime::Message& m) {
    const auto expected = static_cast<char>(messages & 0xff);
    if (m.frames.size() != 1 || m.frames[0].empty() || m.frames[0].data()[0] != expected)
      ++out_of_order;
  }

  void on_message(std::uint64_t bytes) {
    if (messages++ == 0) t0 = Clock::now();
    read_bytes += bytes;
    rss_peak = std::max(rss_peak, vm_rss());
    if (messages == calibrate + 1) {
      message_seconds = seconds_since(t0) / static_cast<double>(calibrate);
      pause = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(message_seconds * slowdown));
      slow_from = Clock::now();
    }
    // The writer stops after `seconds` too: what it left queued is then read at full speed
    // (small messages would otherwise take minutes to drain).
    if (pause != Clock::duration::zero() && seconds_since(slow_from) >= seconds)
      pause = Clock::duration::zero();
    if (pause == Clock::duration::zero()) return read();
    timer.expires_after(pause);
    timer.async_wait([self = shared_from_this()](error_code) { self->read(); });
  }

  comm::CommPtr comm;
  std::size_t calibrate;
  double slowdown, seconds;
  asio::steady_timer timer;
  std::size_t messages = 0, out_of_order = 0;
  std::uint64_t read_bytes = 0;
  std::uint64_t rss_before = vm_rss(), rss_peak = rss_before;
  Clock::time_point t0, slow_from;
  double message_seconds = 0;  ///< per message at full speed (the writer's pace)
  Clock::duration pause{};
  std::promise<void> done;
};

struct WriterResult {
  std::uint64_t written = 0, rss_before = 0, rss_peak = 0;
  double seconds = 0;
};

void write_and_wait(const comm::CommPtr& c, runtime::Message m) {
  std::promise<error_code> handled;
  auto fut = handled.get_future();
  c->async_write(std::move(m), [&handled](error_code ec) { handled.set_value(ec); });
  if (auto ec = fut.get()) throw comm::CommError(ec, "backpressure: a write failed");
}

// Fresh messages, each written once the previous handler ran, for the calibration then
// `seconds`; VmRSS sampled after each handler.
WriterResult write_fast(const comm::CommPtr& c, const BackpressureOptions& o,
                        std::size_t message_bytes) {
  WriterResult r;
  r.rss_before = r.rss_peak = vm_rss();
  Clock::time_point slow_from{};
  const auto t0 = Clock::now();
  for (std::size_t i = 0;; ++i) {
    if (i == o.calibrate) slow_from = Clock::now();
    if (i > o.calibrate && seconds_since(slow_from) >= o.seconds) break;
    auto frame = runtime::Frame::allocate(message_bytes);
    std::memset(frame.mutable_data(), static_cast<int>(i & 0xff), message_bytes);
    write_and_wait(c, runtime::Message({std::move(frame)}));
    r.written += message_bytes;
    r.rss_peak = std::max(r.rss_peak, vm_rss());
  }
  r.seconds = seconds_since(t0);
  c->close();
  return r;
}

std::string reader_summary(const SlowReader& r) {
  return fmt::format("{} {} {} {}", r.read_bytes, r.message_seconds, r.rss_peak - r.rss_before,
                     r.out_of_order);
}

struct Row {
  std::string backend;
  std::size_t message_bytes = 0;
  WriterResult writer;
  std::uint64_t read_bytes = 0;
  double reader_message_seconds = 0;
  std::uint64_t reader_growth = 0;  ///< the reading rank's (mpi, tcp)
  std::size_t out_of_order = 0;     ///< messages read whose fill byte was not the expected one
};

// `run` numbers the runs: each mpi one listens on its own port (listeners live until the end).
Row run_one(RankPair& pair, const BackpressureOptions& o, const std::string& backend,
            std::size_t message_bytes, std::size_t run) {
  Row row{backend, message_bytes, {}, 0, 0, 0, 0};
  std::promise<std::shared_ptr<SlowReader>> accepted;
  auto on_accept = [&accepted, &o](comm::CommPtr c) {
    auto reader = std::make_shared<SlowReader>(std::move(c), o);
    reader->read();
    accepted.set_value(reader);
  };
  std::unique_ptr<comm::Listener> local;  // inproc: the reader is in this process
  std::string contact;
  if (backend == "inproc") {
    if (pair.measures()) {
      local = comm::listen(pair.registry(), "inproc://auto", on_accept);
      contact = local->contact_address();
    }
  } else {
    contact = pair.listen_on_server(backend == "mpi" ? fmt::format("mpi://1:{}", run)
                                                     : "tcp://" + pair.tcp_host() + ":0",
                                    on_accept);
  }
  std::string summary;
  const bool reads_here = backend == "inproc" ? pair.measures() : pair.serves();
  if (pair.measures()) row.writer = write_fast(comm::connect(pair.registry(), contact), o, message_bytes);
  if (reads_here) {
    auto reader = accepted.get_future().get();
    reader->done.get_future().get();
    summary = reader_summary(*reader);
  }
  if (backend != "inproc") summary = pair.pass_string(1, 0, summary);
  pair.barrier();
  if (pair.measures())
    std::istringstream(summary) >> row.read_bytes >> row.reader_message_seconds >> row.reader_growth >>
        row.out_of_order;
  return row;
}

std::uint64_t writer_growth(const Row& r) {
  return r.writer.rss_peak - std::min(r.writer.rss_peak, r.writer.rss_before);
}

constexpr double kMib = 1.0 / (1 << 20);

void print_row(const Row& r, const BackpressureOptions& o, std::uint64_t bound) {
  const std::uint64_t growth = writer_growth(r);
  const double fast = r.reader_message_seconds > 0 ? r.message_bytes * kMib / r.reader_message_seconds : 0;
  const double slow = fast / (1 + o.slowdown);  // read, then pause slowdown reads' time
  const std::string reader = r.backend == "inproc" ? "(same process)"
                                                   : fmt::format("{:.1f}", r.reader_growth * kMib);
  fmt::print("{:<8} {:>8} {:>11.0f} {:>11.1f} {:>11.0f} {:>8.1f} {:>13.1f} {:>14.1f} {:>12.2f} {:>18}\n",
             r.backend, human_bytes(r.message_bytes), fast, slow, r.writer.written * kMib,
             r.writer.seconds, double(r.writer.written) / bound, growth * kMib,
             double(growth) / bound, reader);
}

// Every byte arrived, in order, and (when checking) neither side grew past what the bound
// allows: the writer the bound + one message, the reader also what its MPI layer may hold
// for it before the writer is held back (at most another bound).
bool row_passes(const Row& r, const BackpressureOptions& o, std::uint64_t bound) {
  bool ok = true;
  auto failed = [&](const std::string& why) {
    fmt::print(stderr, "backpressure {} {}: {}\n", r.backend, human_bytes(r.message_bytes), why);
    ok = false;
  };
  if (r.read_bytes != r.writer.written)
    failed(fmt::format("{} bytes written, {} read", r.writer.written, r.read_bytes));
  if (r.out_of_order > 0) failed(fmt::format("{} messages out of order", r.out_of_order));
  if (o.check_slack_mib < 0) return ok;
  const double slack = o.check_slack_mib * (1 << 20);
  if (double(writer_growth(r)) > double(bound + r.message_bytes) + slack)
    failed(fmt::format("the writer's RSS grew {:.1f} MiB, more than the bound + one message + "
                       "{} MiB", writer_growth(r) * kMib, o.check_slack_mib));
  if (double(r.reader_growth) > double(2 * bound + r.message_bytes) + slack)
    failed(fmt::format("the reader's RSS grew {:.1f} MiB, more than twice the bound + one "
                       "message + {} MiB", r.reader_growth * kMib, o.check_slack_mib));
  return ok;
}

}  // namespace

int run_backpressure(const BackpressureOptions& o) {
  for (const auto& b : o.backends)
    if (b != "mpi" && b != "tcp" && b != "inproc")
      throw std::invalid_argument("unknown backend '" + b + "' (use mpi, tcp, inproc)");
  if (o.calibrate == 0 || o.message_sizes.empty() ||
      std::find(o.message_sizes.begin(), o.message_sizes.end(), 0) != o.message_sizes.end())
    throw std::invalid_argument("--calibrate and --size must be positive");
  RankPair pair("taskwire-bench backpressure");
  const std::uint64_t bound = runtime::Config::from_env().limits.max_queued_bytes;
  std::vector<Row> rows;
  for (const auto size : o.message_sizes)
    for (const auto& backend : o.backends)
      rows.push_back(run_one(pair, o, backend, size, rows.size()));
  pair.finish();
  if (!pair.measures()) return 0;
  fmt::print("backpressure: bound (max_queued_bytes) {}, reader {}x slower than the writer "
             "after {} messages\n",
             human_bytes(bound), o.slowdown, o.calibrate);
  fmt::print("{:<8} {:>8} {:>11} {:>11} {:>11} {:>8} {:>13} {:>14} {:>12} {:>18}\n", "backend",
             "message", "fast MiB/s", "slow MiB/s", "written MiB", "seconds", "written/bound",
             "RSS growth MiB", "growth/bound", "reader growth MiB");
  CsvWriter csv(o.csv, "backend,bound,message_bytes,written_bytes,seconds,rss_growth,reader_rss_growth");
  int rc = 0;
  for (const auto& r : rows) {
    print_row(r, o, bound);
    csv.row(fmt::format("{},{},{},{},{:.3f},{},{}", r.backend, bound, r.message_bytes,
                        r.writer.written, r.writer.seconds, writer_growth(r), r.reader_growth));
    if (!row_passes(r, o, bound)) rc = 1;
  }
  return rc;
}

}  // namespace taskwire::bench
