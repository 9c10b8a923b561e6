// taskwire-bench latency under mpiexec: rank 0 measures, rank 1 echoes, ranks 2.. stay idle
// with the runtime up (so "4 ranks on 2 cores, two idle" is measured as users would run it).
// Every backend runs between the same two processes in the same launch:
//   mpi      the MPI backend through the Comm interface (mpi://1)
//   raw-mpi  plain blocking MPI_Send/MPI_Recv on MPI_COMM_WORLD (the floor)
//   tcp      the TCP backend through the Comm interface (rank 1 listens on 127.0.0.1, or on
//            its host's address when the ranks are on different hosts)
//   raw-tcp  blocking sockets (the floor for tcp)
#include "bench/latency_mpi.hpp"

#include "bench/pingpong.hpp"
#include "bench/raw_tcp.hpp"

#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/comm/mpi/mpi_broadcast.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <thread>

namespace taskwire::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Point-to-point exchange of a short string outside the comm layer (under the runtime's
// MPI mutex, polled so no rank spins in a blocking call).
std::string exchange_string(mpi::MpiEnvironment& env, int from, int to, const std::string& s) {
  std::string out;
  std::lock_guard lock(*env.mutex());
  if (env.rank() == from) {
    MPI_Send(s.data(), static_cast<int>(s.size()), MPI_CHAR, to, 77, MPI_COMM_WORLD);
    out = s;
  } else if (env.rank() == to) {
    MPI_Status st;
    int flag = 0;
    while (!flag) {
      MPI_Iprobe(from, 77, MPI_COMM_WORLD, &flag, &st);
      if (!flag) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    int n = 0;
    MPI_Get_count(&st, MPI_CHAR, &n);
    out.resize(n);
    MPI_Recv(out.data(), n, MPI_CHAR, from, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return out;
}

std::vector<double> raw_mpi(mpi::MpiEnvironment& env, const PingPongPlan& plan) {
  std::vector<char> buf(std::max<std::size_t>(plan.bytes, 1));
  if (env.rank() > 1) return {};
  // The runtime's poller must not make MPI calls meanwhile (thread level SERIALIZED).
  std::lock_guard lock(*env.mutex());
  const int n = static_cast<int>(plan.bytes);
  const int peer = 1 - env.rank();
  // Rank 0 decides how many round trips; it tells rank 1 first.
  long total = 0;
  if (env.rank() == 0) {
    total = static_cast<long>(plan.warmup + plan.max_iterations);
    MPI_Send(&total, 1, MPI_LONG, 1, 78, MPI_COMM_WORLD);
  } else {
    MPI_Recv(&total, 1, MPI_LONG, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  RoundTripSampler sampler(plan);
  for (long i = 0; i < total; ++i) {
    if (env.rank() == 0) {
      const auto t0 = Clock::now();
      MPI_Send(buf.data(), n, MPI_BYTE, peer, 79, MPI_COMM_WORLD);
      MPI_Recv(buf.data(), n, MPI_BYTE, peer, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      const bool last = sampler.record(t0, Clock::now());
      if (static_cast<std::size_t>(i) < plan.warmup) continue;
      // After the warm-up, tell rank 1 after each round trip whether it was the last.
      int stop = last ? 1 : 0;
      MPI_Send(&stop, 1, MPI_INT, peer, 80, MPI_COMM_WORLD);
      if (last) break;
    } else {
      MPI_Recv(buf.data(), n, MPI_BYTE, peer, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf.data(), n, MPI_BYTE, peer, 79, MPI_COMM_WORLD);
      if (static_cast<std::size_t>(i) >= plan.warmup) {
        int stop = 0;
        MPI_Recv(&stop, 1, MPI_INT, peer, 80, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (stop) break;
      }
    }
  }
  return std::move(sampler.samples());
}

// Single round trips, each after both ranks were idle for the gap (the echoing rank's poller
// has gone to its deepest sleep by then): what the first message after a quiet spell costs.
LatencyRow after_idle(const comm::CommPtr& c, const LatencyOptions& o, const std::string& backend) {
  PingPongPlan one;
  one.bytes = o.sizes.empty() ? 8 : o.sizes.front();
  one.warmup = 0;
  one.min_iterations = one.max_iterations = 1;
  LatencyRow row{backend + "-idle", one.bytes, {}};
  for (std::size_t i = 0; i < o.idle_rounds; ++i) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_gap_seconds));
    for (double us : ping_pong(c, one)) row.samples.push_back(us);
  }
  return row;
}

}  // namespace

bool launched_by_mpiexec() {
  for (const char* var : {"PMI_SIZE", "PMI_RANK", "HYDI_CONTROL_FD", "PMIX_RANK"})
    if (std::getenv(var)) return true;
  return false;
}

void run_latency_mpi(const LatencyOptions& o, const PlanFor& plan_for, const LatencyReport& report) {
  mpi::MpiEnvironment env;
  if (env.size() < 2)
    throw std::runtime_error(
        "the mpi and raw-mpi backends need two ranks: mpiexec.mpich -n 2 taskwire-bench latency ...");
  auto cfg = runtime::Config::from_env();
  cfg.role = env.rank() == 0 ? "bench-client" : "bench-server";
  runtime::Context ctx(cfg, 1);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  const auto tcp_host = mpi::default_tcp_host(env);
  std::vector<LatencyRow> rows;
  std::unique_ptr<comm::Listener> mpi_listener;
  if (env.rank() == 1)
    mpi_listener = comm::listen(registry, "mpi://1", [](comm::CommPtr c) { echo_forever(c); });
  env.barrier();

  for (const auto& backend : o.backends) {
    if (backend == "raw-mpi") {
      for (auto bytes : o.sizes) {
        auto s = raw_mpi(env, plan_for(bytes));
        if (env.rank() == 0) rows.push_back({backend, bytes, s});
      }
    } else if (backend == "mpi" || backend == "tcp") {
      std::unique_ptr<comm::Listener> tcp_listener;
      std::string target = "mpi://1";
      if (backend == "tcp") {
        if (env.rank() == 1)
          tcp_listener = comm::listen(registry, "tcp://" + tcp_host + ":0", [](comm::CommPtr c) { echo_forever(c); });
        target = exchange_string(env, 1, 0, tcp_listener ? tcp_listener->contact_address() : "");
      }
      if (env.rank() == 0) {
        auto c = comm::connect(registry, target);
        for (auto bytes : o.sizes) rows.push_back({backend, bytes, ping_pong(c, plan_for(bytes))});
        if (o.idle_gap_seconds > 0) rows.push_back(after_idle(c, o, backend));
        c->close();
      }
      env.barrier();
    } else if (backend == "raw-tcp") {
      std::unique_ptr<RawTcpAcceptor> acceptor;
      if (env.rank() == 1) acceptor = std::make_unique<RawTcpAcceptor>(tcp_host);
      auto contact = exchange_string(env, 1, 0, acceptor ? acceptor->contact() : "");
      if (env.rank() == 1) {
        acceptor->accept().echo_until_closed();
      } else if (env.rank() == 0) {
        auto sock = RawTcpSocket::connect(contact);
        for (auto bytes : o.sizes)
          rows.push_back({backend, bytes, raw_tcp_ping_pong(sock, plan_for(bytes))});
      }
      env.barrier();
    } else {
      throw std::runtime_error("unknown backend '" + backend + "' (use mpi, raw-mpi, tcp, raw-tcp)");
    }
  }

  if (o.idle_seconds > 0) {
    // CPU used by each rank while the runtime is up and idle.
    env.barrier();
    rusage r0{}, r1{};
    getrusage(RUSAGE_SELF, &r0);
    std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_seconds));
    getrusage(RUSAGE_SELF, &r1);
    auto secs = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
    double cpu = secs(r1.ru_utime) - secs(r0.ru_utime) + secs(r1.ru_stime) - secs(r0.ru_stime);
    const double percent = 100.0 * cpu / o.idle_seconds;
    for (int r = 1; r < env.size(); ++r) {
      auto got = exchange_string(env, r, 0, env.rank() == r ? fmt::format("{:.3f}", percent) : "");
      if (env.rank() == 0) rows.push_back({fmt::format("idle-cpu-rank{}", r), 0, {std::stod(got)}});
    }
    if (env.rank() == 0) rows.insert(rows.end() - (env.size() - 1), {"idle-cpu-rank0", 0, {percent}});
  }
  mpi_listener.reset();
  env.barrier();
  ctx.stop();
  if (env.rank() == 0) report(rows);
}

}  // namespace taskwire::bench
