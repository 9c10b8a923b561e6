#include "bench/latency.hpp"

#include "bench/latency_mpi.hpp"
#include "bench/pingpong.hpp"
#include "bench/raw_tcp.hpp"
#include "bench/stats.hpp"
#include "bench/tls_files.hpp"

#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/context.hpp>

#include <fmt/format.h>

#include <cstdio>

#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

namespace taskwire::bench {
namespace {

struct LatencySummaryRow {
  std::string backend;
  std::size_t bytes;
  std::size_t iterations;
  Summary s;
};

PingPongPlan plan_for(const LatencyOptions& o, std::size_t bytes) {
  PingPongPlan p;
  p.bytes = bytes;
  p.max_iterations = o.max_iterations;
  p.budget = std::chrono::milliseconds(static_cast<long>(o.seconds_per_size * 1000));
  p.warmup = bytes >= (1u << 22) ? 3 : 20;
  p.min_iterations = bytes >= (1u << 22) ? 5 : 10;
  return p;
}

// Client and echo server each on their own Context (one io thread each), as two
// processes would be, so the comparison with the two-thread raw baseline is fair.
std::vector<LatencySummaryRow> measure_comm_backend(const LatencyOptions& o, const std::string& backend) {
  auto make = [](const char* role) {
    auto cfg = runtime::Config::from_env();
    cfg.role = role;
    return std::make_unique<runtime::Context>(cfg, 1);
  };
  auto server_ctx = make("bench-server");
  auto client_ctx = make("bench-client");
  comm::Registry server_reg(*server_ctx), client_reg(*client_ctx);
  comm::register_builtin_backends(server_reg);
  comm::register_builtin_backends(client_reg);
  server_ctx->start();
  client_ctx->start();
  const std::string where = backend == "inproc" ? "inproc://auto" : backend + "://127.0.0.1:0";
  auto listener = comm::listen(server_reg, where, [](comm::CommPtr c) { echo_forever(c); });
  auto comm = comm::connect(client_reg, listener->contact_address());
  std::vector<LatencySummaryRow> rows;
  for (auto bytes : o.sizes) {
    auto samples = ping_pong(comm, plan_for(o, bytes));
    rows.push_back({backend, bytes, samples.size(), summarize(samples)});
  }
  comm->close();
  listener.reset();
  client_ctx->stop();
  server_ctx->stop();
  return rows;
}

std::vector<LatencySummaryRow> measure_raw_tcp(const LatencyOptions& o) {
  RawTcpAcceptor acceptor;
  std::thread server([&acceptor] {
    acceptor.accept().echo_until_closed();
  });
  std::vector<LatencySummaryRow> rows;
  {
    auto sock = RawTcpSocket::connect("127.0.0.1", acceptor.port());
    for (auto bytes : o.sizes) {
      auto samples = raw_tcp_ping_pong(sock, plan_for(o, bytes));
      rows.push_back({"raw-tcp", bytes, samples.size(), summarize(samples)});
    }
  }  // closing the socket ends the server loop
  server.join();
  return rows;
}

}  // namespace

int print_rows(const LatencyOptions& o, const std::vector<LatencySummaryRow>& all);

int run_latency(const LatencyOptions& o) {
  std::vector<LatencySummaryRow> all;
  bool needs_mpi = launched_by_mpiexec();
  for (const auto& b : o.backends) needs_mpi = needs_mpi || b == "mpi" || b == "raw-mpi";
  if (needs_mpi) {
    // Only rank 0 reports; the others print nothing.
    run_latency_mpi(o, [&](std::size_t bytes) { return plan_for(o, bytes); }, [&](const std::vector<LatencyRow>& rows) {
      for (auto& r : rows) {
        if (r.backend.rfind("idle-cpu", 0) == 0) {
          fmt::print("{}: {:.2f} % of a core while idle for {} s\n", r.backend, r.samples.at(0), o.idle_seconds);
          continue;
        }
        all.push_back({r.backend, r.bytes, r.samples.size(), summarize(r.samples)});
      }
      print_rows(o, all);
      std::fflush(stdout);
    });
    return 0;
  }
  std::unique_ptr<BenchTlsFiles> tls_files;
  for (const auto& b : o.backends) {
    std::vector<LatencySummaryRow> rows;
    if (b == "tls" && !tls_files) tls_files = std::make_unique<BenchTlsFiles>(std::to_string(::getpid()));
    if (b == "tcp" || b == "tls" || b == "inproc") rows = measure_comm_backend(o, b);
    else if (b == "raw-tcp") rows = measure_raw_tcp(o);
    else {
      fmt::print(stderr,
                 "taskwire-bench latency: unknown backend '{}' (use tcp, tls, raw-tcp, inproc; mpi and "
                 "raw-mpi under mpiexec.mpich -n 2)\n", b);
      return 2;
    }
    for (const auto& r : rows) all.push_back(r);
  }
  return print_rows(o, all);
}

// "A/B p50 round trip: 8 B 1.21  64 B 1.19 ...", when both were measured.
void print_ratio(const std::vector<LatencySummaryRow>& all, const std::string& a, const std::string& b) {
  std::string line;
  for (const auto& ra : all)
    for (const auto& rb : all)
      if (ra.backend == a && rb.backend == b && ra.bytes == rb.bytes && rb.s.p50 > 0)
        line += fmt::format("  {} {:.2f}", human_bytes(ra.bytes), ra.s.p50 / rb.s.p50);
  if (!line.empty()) fmt::print("{}/{} p50 round trip:{}\n", a, b, line);
}

int print_rows(const LatencyOptions& o, const std::vector<LatencySummaryRow>& all) {
  CsvWriter csv(o.csv, "backend,bytes,iterations,p50_us,p99_us,mean_us");
  for (const auto& r : all)
    csv.row(fmt::format("{},{},{},{:.3f},{:.3f},{:.3f}", r.backend, r.bytes, r.iterations, r.s.p50,
                        r.s.p99, r.s.mean));
  fmt::print("{:<10} {:>10} {:>8} {:>12} {:>12} {:>12}\n", "backend", "size", "iters", "p50 us",
             "p99 us", "mean us");
  for (auto bytes : o.sizes)
    for (const auto& r : all)
      if (r.bytes == bytes)
        fmt::print("{:<10} {:>10} {:>8} {:>12.2f} {:>12.2f} {:>12.2f}\n", r.backend,
                   human_bytes(r.bytes), r.iterations, r.s.p50, r.s.p99, r.s.mean);
  print_ratio(all, "tls", "tcp");
  print_ratio(all, "mpi", "raw-mpi");
  print_ratio(all, "mpi-idle", "mpi");
  print_ratio(all, "tcp-idle", "tcp");
  return 0;
}

}  // namespace taskwire::bench
