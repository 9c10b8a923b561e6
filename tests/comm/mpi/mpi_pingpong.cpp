// A quick ping-pong between ranks 0 and 1 to measure the MPI backend against raw MPI and the
// TCP backend in one run (the official figures come from taskwire-bench; this is the
// backend's own measuring tool). Other ranks stay idle with the runtime up, as in the
// "4 ranks on 2 cores, two idle" target.
//   mpiexec.mpich -n 2 mpi_pingpong [--multiple] [--idle-seconds S] [--sizes 8,1024,...]
// Prints one line per (transport, size): round trip in microseconds (median of 5 batches).
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace taskwire;
using Clock = std::chrono::steady_clock;

namespace {

int iterations_for(std::size_t n) {
  if (n <= 1024) return 5000;
  if (n <= 65536) return 1000;
  if (n <= (1u << 20)) return 200;
  return 20;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Raw MPI_Send/MPI_Recv on MPI_COMM_WORLD (before the runtime polls: the level may be
// SERIALIZED), as a baseline. Blocking calls spin; fine for two ranks on two cores.
double raw_mpi(int rank, std::size_t n) {
  std::vector<char> buf(std::max<std::size_t>(n, 1));
  const int iters = iterations_for(n);
  std::vector<double> batches;
  for (int b = 0; b < 6; ++b) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
      if (rank == 0) {
        MPI_Send(buf.data(), int(n), MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), int(n), MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf.data(), int(n), MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), int(n), MPI_BYTE, 0, 7, MPI_COMM_WORLD);
      }
    }
    if (b) batches.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters);
  }
  return median(batches);
}

// Echo server: read, write back, read...
void echo(comm::CommPtr c) {
  c->async_read([c](error_code ec, runtime::Message m) {
    if (ec) return;
    c->async_write(std::move(m), [](error_code) {});
    echo(c);
  });
}

// `iters` round trips chained on the comm's strand (no thread hand-off in the loop).
double chained(const comm::CommPtr& c, std::size_t n, int iters) {
  runtime::Message msg({runtime::Frame::allocate(n)});
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  auto left = std::make_shared<int>(iters);
  auto step = std::make_shared<std::function<void()>>();
  *step = [c, msg, done, left, step] {
    c->async_write(msg, [](error_code) {});
    c->async_read([c, done, left, step](error_code ec, runtime::Message) {
      if (ec) {
        fmt::print(stderr, "read failed: {}\n", ec.message());
        std::exit(2);
      }
      if (--*left == 0) {
        *step = nullptr;  // breaks the cycle
        done->set_value();
        return;
      }
      (*step)();
    });
  };
  const auto t0 = Clock::now();
  asio::post(c->executor(), [step] { (*step)(); });
  fut.wait();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters;
}

double backend_pingpong(const comm::CommPtr& c, std::size_t n) {
  const int iters = iterations_for(n);
  std::vector<double> batches;
  for (int b = 0; b < 6; ++b) {
    const double t = chained(c, n, iters);
    if (b) batches.push_back(t);
  }
  return median(batches);
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

std::vector<std::size_t> parse_sizes(const std::string& s) {
  std::vector<std::size_t> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto comma = s.find(',', pos);
    out.push_back(std::stoull(s.substr(pos, comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  mpi::MpiEnvironmentOptions opts;
  double idle_seconds = 3;
  std::vector<std::size_t> sizes{8, 1024, 65536, 1u << 20, 16u << 20};
  bool skip_tcp = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--multiple") opts.thread_level = mpi::MpiThreadLevel::multiple;
    else if (a == "--idle-seconds" && i + 1 < argc) idle_seconds = std::stod(argv[++i]);
    else if (a == "--sizes" && i + 1 < argc) sizes = parse_sizes(argv[++i]);
    else if (a == "--no-tcp") skip_tcp = true;
  }
  mpi::MpiEnvironment env(argc, argv, opts);
  const int rank = env.rank();
  if (env.size() < 2) {
    fmt::print(stderr, "run under mpiexec.mpich -n 2 (or more)\n");
    return 1;
  }
  std::vector<double> raw;
  for (auto n : sizes) raw.push_back(raw_mpi(rank, n));

  auto config = runtime::Config::from_env();
  config.role = "bench";
  runtime::Context ctx(config, 1);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();

  // TCP: rank 1 listens, tells rank 0 its port through MPI (before mpi:// is used).
  std::vector<double> tcp(sizes.size(), 0);
  if (!skip_tcp) {
    std::unique_ptr<comm::Listener> tl;
    int port = 0;
    if (rank == 1) {
      tl = comm::listen(registry, "tcp://127.0.0.1:0", [](comm::CommPtr c) { echo(c); });
      port = std::stoi(tl->contact_address().substr(tl->contact_address().rfind(':') + 1));
    }
    MPI_Bcast(&port, 1, MPI_INT, 1, MPI_COMM_WORLD);
    if (rank == 0) {
      auto c = comm::connect(registry, fmt::format("tcp://127.0.0.1:{}", port));
      for (std::size_t i = 0; i < sizes.size(); ++i) tcp[i] = backend_pingpong(c, sizes[i]);
      c->close();
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }

  auto ml = comm::listen(registry, fmt::format("mpi://{}", rank), [](comm::CommPtr c) { echo(c); });
  env.barrier();
  std::vector<double> mpi(sizes.size(), 0);
  comm::CommPtr mc;
  if (rank == 0) {
    mc = comm::connect(registry, "mpi://1");
    for (std::size_t i = 0; i < sizes.size(); ++i) mpi[i] = backend_pingpong(mc, sizes[i]);
  }
  env.barrier();
  if (rank == 0) {
    fmt::print("ranks {}  thread level {}\n", env.size(),
               opts.thread_level == mpi::MpiThreadLevel::multiple ? "multiple" : "serialized");
    fmt::print("{:>10} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "bytes", "raw_us", "mpi_us",
               "tcp_us", "mpi/raw", "mpi/tcp");
    for (std::size_t i = 0; i < sizes.size(); ++i)
      fmt::print("{:>10} {:>10.2f} {:>10.2f} {:>10.2f} {:>8.2f} {:>8.2f}\n", sizes[i], raw[i],
                 mpi[i], tcp[i], mpi[i] / raw[i], tcp[i] > 0 ? mpi[i] / tcp[i] : 0.0);
    std::fflush(stdout);
  }
  // Idle: the runtime is up (listener, open comm), nothing moves.
  env.barrier();
  const double c0 = cpu_seconds();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(idle_seconds));
  const double used = cpu_seconds() - c0;
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  env.barrier();
  fmt::print("rank {} idle: {:.2f} % of a core over {:.1f} s\n", rank, 100 * used / wall, wall);
  std::fflush(stdout);
  if (mc) mc->close();
  ml.reset();
  return 0;
}
