#include "bench/idle.hpp"
#include "bench/cluster_ranks.hpp"

#include "bench/stats.hpp"

#include <taskwire/launch/mpi/launch.hpp>

#include <fmt/format.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace taskwire::bench {
namespace {

constexpr int kClientRank = 1;

double cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return secs(r.ru_utime) + secs(r.ru_stime);
}

// Waits for a nonblocking collective on MPI_COMM_WORLD, testing it under the runtime's MPI
// mutex every `period` (never a blocking MPI call: it would spin and spoil the figures).
// False when `cancelled` became true first (the request is then left pending).
bool wait_polled(mpi::MpiEnvironment& env, MPI_Request& req, std::chrono::milliseconds period,
                 const std::atomic<bool>& cancelled) {
  for (int done = 0;;) {
    {
      std::lock_guard lock(*env.mutex());
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
    if (done) return true;
    if (cancelled) return false;
    std::this_thread::sleep_for(period);
  }
}

// One rank's part of the window: wait for the client rank's start signal (a broadcast), read
// CPU time, sleep `seconds`, read it again, gather {cpu, wall} to the client rank. Returns
// the gathered pairs on the client rank, {} elsewhere or when cancelled.
std::vector<double> measure_window(mpi::MpiEnvironment& env, double seconds,
                                   const std::atomic<bool>& cancelled) {
  int start = 1;
  MPI_Request req;
  {
    std::lock_guard lock(*env.mutex());
    MPI_Ibcast(&start, 1, MPI_INT, kClientRank, MPI_COMM_WORLD, &req);
  }
  if (!wait_polled(env, req, std::chrono::milliseconds(5), cancelled)) return {};
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const double c1 = cpu_seconds();
  double mine[2] = {c1 - c0, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  std::vector<double> all(env.rank() == kClientRank ? 2 * env.size() : 0);
  {
    std::lock_guard lock(*env.mutex());
    MPI_Igather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, kClientRank, MPI_COMM_WORLD, &req);
  }
  // Once the window has started every rank gets here, so this wait is never cancelled.
  const std::atomic<bool> never{false};
  wait_polled(env, req, std::chrono::milliseconds(1), never);
  return all;
}

const char* role_of(int rank) {
  return rank == 0 ? "scheduler" : rank == kClientRank ? "client" : "worker";
}

}  // namespace

int run_idle(const IdleOptions& o) {
  if (o.seconds <= 0 || o.settle < 0) throw std::invalid_argument("--seconds must be positive, --settle not negative");
  mpi::MpiEnvironment env;
  if (!enough_ranks_for_cluster(env, "idle", 4)) return 2;
  CsvWriter csv(env.rank() == kClientRank ? o.csv : "", "backend,rank,role,seconds,cpu_seconds,cpu_percent");
  bool ok = true;
  for (const auto& backend : o.backends) {
    mpi::LaunchOptions lo;
    lo.transport = mpi::parse_transport(backend);
    // Ranks other than the client take part from a helper thread: their main thread is
    // inside run_cluster, serving.
    std::atomic<bool> cancelled{false};
    std::thread helper;
    if (env.rank() != kClientRank) helper = std::thread([&] { measure_window(env, o.seconds, cancelled); });
    int rc = mpi::run_cluster(env, lo, mpi::Layout{0, kClientRank}, [&](Client&) {
      std::this_thread::sleep_for(std::chrono::duration<double>(o.settle));
      const auto all = measure_window(env, o.seconds, cancelled);
      double total = 0;
      fmt::print("{:<4} {:>4} {:<9} {:>8} {:>10} {:>8}\n", "idle", "rank", "role", "seconds", "cpu s", "cpu %");
      for (int r = 0; r < env.size(); ++r) {
        const double cpu = all.at(2 * r), wall = all.at(2 * r + 1), percent = 100 * cpu / wall;
        total += percent;
        fmt::print("{:<4} {:>4} {:<9} {:>8.2f} {:>10.4f} {:>8.2f}\n", backend, r, role_of(r), wall, cpu, percent);
        csv.row(fmt::format("{},{},{},{:.3f},{:.6f},{:.3f}", backend, r, role_of(r), wall, cpu, percent));
      }
      fmt::print("{:<4} all {} ranks: {:.2f} % of one core while idle\n", backend, env.size(), total);
      std::fflush(stdout);
    });
    cancelled = true;  // a cluster that failed before the window must not leave the helper waiting
    if (helper.joinable()) helper.join();
    if (rc != 0) ok = false;
  }
  return ok ? 0 : 1;
}

}  // namespace taskwire::bench
