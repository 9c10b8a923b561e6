// A user program launched whole under `mpiexec.mpich -n N` by ctest (tests/launch), judged on
// its exit status, time and output by run_expect.cmake:
//   initialize mpi|tcp   dask_mpi style: rank 0 scheduler, rank 1 this program, 2.. workers
//   pool mpi|tcp         static pool: rank 0 program + scheduler, 1.. workers
//   both                 one launch, two clusters in turn (run_cluster over mpi, then tcp)
//   run-options mpi|tcp LIB  run_cluster applies LaunchOptions' log level, log file and
//                        preload (LIB: a library of registered functions)
//   crash|kill           a task aborts (SIGABRT) or SIGKILLs its worker rank mid-graph
//   busy                 the program ends while tasks still run
//   small                initialize with too few ranks (expects a clear error)
//   quick mpi|tcp        initialize, one small computation (for repeated launches)
//   forever|forever-pool mpi|tcp  initialize (or the pool), then computes until a signal ends
//                        the job (signals_test.sh sends SIGINT/SIGTERM to mpiexec)
// Prints "CHECKED <what>" for every check that passed and "FAILED <what>" otherwise.
#include "tests/launch/checks.hpp"

#include <taskwire/mpi.hpp>
#include <taskwire/client/progress.hpp>
#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/runtime/log.hpp>

#include <boost/serialization/vector.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <csignal>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>

namespace launch_fns {
int inc(int x) { return x + 1; }
int add(int a, int b) { return a + b; }
long total(std::vector<int> xs) { return std::accumulate(xs.begin(), xs.end(), 0L); }
int fail_on_13(int x) {
  if (x == 13) throw std::runtime_error("bad input 13");
  return x;
}
int die(int how) {  // 1: abort, 2: SIGKILL
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (how == 1) std::abort();
  ::kill(::getpid(), SIGKILL);
  return how;
}
int nap(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
long scaled_total(const std::vector<int>& xs, int factor) {
  return factor * std::accumulate(xs.begin(), xs.end(), 0L);
}
int rank_of(int) {
  const char* r = std::getenv("PMI_RANK");
  return r ? std::atoi(r) : -1;
}
}  // namespace launch_fns

TASKWIRE_REGISTER(launch_fns::inc);
TASKWIRE_REGISTER(launch_fns::add);
TASKWIRE_REGISTER(launch_fns::total);
TASKWIRE_REGISTER(launch_fns::fail_on_13);
TASKWIRE_REGISTER(launch_fns::die);
TASKWIRE_REGISTER(launch_fns::nap);
TASKWIRE_REGISTER(launch_fns::rank_of);
TASKWIRE_REGISTER(launch_fns::scaled_total);

namespace {

using namespace taskwire;

using launch_checks::check;
using launch_checks::failures;

// What the scheduler says of the cluster: every worker rank, on the launch's transport, with
// its thread and its memory (reported with its registration).
void check_scheduler_info(Client& client, const std::string& label, int workers,
                          const std::string& transport) {
  const auto info = client.scheduler_info();
  check(static_cast<int>(info.workers.size()) == workers &&
            static_cast<int>(info.total_threads()) == workers,
        label + ": scheduler_info lists every worker rank, one thread each");
  // The pool's client, in the scheduler's process, reaches it over inproc://.
  bool described = info.clients == 1 && std::find(info.addresses.begin(), info.addresses.end(),
                                                  info.address) != info.addresses.end();
  for (const auto& w : info.workers)
    described = described && w.address.rfind(transport + "://", 0) == 0 && w.memory > 0 &&
                !w.host.empty() && w.nthreads == 1;
  check(described, label + ": scheduler_info gives each worker's address, host and memory");
}

// The computations every launch mode runs: dependencies across workers, a diamond, a fan-in,
// a 10 000-task map (its progress reported in lines: the rank's stderr is no terminal), a task
// error reaching get(), work spread over every worker rank, and scheduler_info.
void compute(Client& client, const std::string& label, int workers, const std::string& transport) {
  check_scheduler_info(client, label, workers, transport);
  std::vector<int> xs(10'000);
  std::iota(xs.begin(), xs.end(), 0);
  auto mapped = client.map(launch_fns::inc, xs);
  check(!ProgressReporter({}, 0).draws_bar(), label + ": no progress bar under mpiexec");
  const auto counts = progress(mapped);
  check(counts.done == 10'000 && counts.erred == 0, label + ": progress of the map of 10000");
  auto ys = client.gather(mapped);
  check(std::accumulate(ys.begin(), ys.end(), 0L) == 10'000L * 10'001 / 2, label + ": map of 10000");

  auto a = client.submit(launch_fns::inc, 1);
  auto b = client.submit(launch_fns::add, a, a);
  auto c = client.submit(launch_fns::add, a, 10);
  auto d = client.submit(launch_fns::add, b, c);
  check(d.get() == (2 + 2) + (2 + 10), label + ": diamond");

  std::vector<Future<int>> leaves;
  for (int i = 0; i < 64; ++i) leaves.push_back(client.submit(launch_fns::inc, i));
  while (leaves.size() > 1) {  // binary fan-in
    std::vector<Future<int>> next;
    for (std::size_t i = 0; i + 1 < leaves.size(); i += 2)
      next.push_back(client.submit(launch_fns::add, leaves[i], leaves[i + 1]));
    if (leaves.size() % 2) next.push_back(leaves.back());
    leaves = std::move(next);
  }
  check(leaves.front().get() == 64 * 65 / 2, label + ": fan-in tree");

  try {
    client.submit(launch_fns::fail_on_13, 13).get();
    check(false, label + ": task error reaches get()");
  } catch (const TaskError& e) {
    check(std::string(e.what()).find("bad input 13") != std::string::npos,
          label + ": task error reaches get()");
  }

  // Scatter straight to the worker ranks (and a broadcast copy on each), a map over the
  // scattered chunks with the broadcast value fixed, a part of a scattered vector.
  auto chunks = client.scatter_each(std::vector<std::vector<int>>(2 * workers, std::vector<int>(1000, 1)));
  auto factor = client.scatter(3, {.broadcast = true});
  auto scaled = client.gather(client.map(launch_fns::scaled_total, chunks, fixed(factor)));
  check(std::all_of(scaled.begin(), scaled.end(), [](long v) { return v == 3000; }) &&
            client.getitem(chunks[0], 999).get() == 1,
        label + ": scatter to the workers, map with a fixed future, getitem");

  std::vector<int> naps(8 * workers, 20);
  auto ranks = client.gather(client.map(launch_fns::rank_of, naps));
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  check(static_cast<int>(ranks.size()) >= std::min(workers, 2), label + ": work on several worker ranks");
}

mpi::LaunchOptions options_for(const std::string& transport) {
  mpi::LaunchOptions o;
  o.transport = mpi::parse_transport(transport);
  if (const char* lf = std::getenv("LAUNCH_LOG_FILE")) o.log_file = lf;
  if (const char* level = std::getenv("LAUNCH_LOG_LEVEL")) o.log_level = level;
  return o;
}

// run_cluster with LaunchOptions' preload (a missing library first: every rank must refuse
// it), log level and log file.
int run_cluster_options(int argc, char** argv, const std::string& transport, const std::string& lib) {
  mpi::MpiEnvironment env(argc, argv);
  const int rank = env.rank();
  auto o = options_for(transport);
  o.preload = {"/nonexistent/libtaskwire-no-such-plugin.so"};
  try {
    mpi::run_cluster(env, o, mpi::Layout{0, 1}, [](Client&) {});
    check(false, fmt::format("rank {}: run_cluster refuses a preload it cannot load", rank));
  } catch (const std::exception& e) {
    check(std::string(e.what()).find("cannot load") != std::string::npos,
          fmt::format("rank {}: run_cluster refuses a preload it cannot load", rank));
  }
  const auto dir = std::filesystem::temp_directory_path();
  const auto pattern = fmt::format("taskwire-run-options-{}-{{rank}}.log", ::getppid());
  o.preload = {lib};
  o.log_level = "info";
  o.log_file = (dir / pattern).string();
  const int rc = mpi::run_cluster(env, o, mpi::Layout{0, 1}, [](Client& client) {
    check(client.submit(launch_fns::inc, 1).get() == 2, "run-options: the cluster computes");
  });
  check(runtime::FunctionRegistry::global().find("cluster_fns::inc") != nullptr,
        fmt::format("rank {}: run_cluster loaded LaunchOptions::preload", rank));
  spdlog::default_logger()->flush();
  const auto file = dir / fmt::format("taskwire-run-options-{}-{}.log", ::getppid(), rank);
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  check(text.find(fmt::format("[rank {}] [info]", rank)) != std::string::npos,
        fmt::format("rank {}: run_cluster logged at info to LaunchOptions::log_file", rank));
  runtime::init_logging({"warn", "", rank});
  std::filesystem::remove(file);
  if (rank == 1) fmt::print("rank 1: done, {} failures\n", failures);
  return rc || failures ? 1 : 0;
}

}  // namespace

int run(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "initialize";
  const std::string transport = argc > 2 ? argv[2] : "mpi";
  if (mode == "quick") {
    auto session = mpi::initialize(argc, argv, options_for(transport));
    auto& client = session.client();
    auto b = client.submit(launch_fns::add, client.submit(launch_fns::inc, 1), 40);
    check(b.get() == 42, "quick: a dependency");
    auto ys = client.gather(client.map(launch_fns::inc, std::vector<int>(100, 1)));
    check(std::accumulate(ys.begin(), ys.end(), 0) == 200, "quick: map of 100");
    session.shutdown();
    fmt::print("rank {}: done, {} failures\n", session.rank(), failures);
    return failures ? 1 : 0;
  }
  if (mode == "initialize" || mode == "pool" || mode == "small") {
    auto session = mode == "pool" ? mpi::initialize_pool(argc, argv, options_for(transport))
                                  : mpi::initialize(argc, argv, options_for(transport));
    compute(session.client(), fmt::format("{} over {}", mode, transport), session.workers(),
            transport);
    session.shutdown();
    fmt::print("rank {}: done, {} failures\n", session.rank(), failures);
    return failures ? 1 : 0;
  }
  if (mode == "both") {
    mpi::MpiEnvironment env(argc, argv);
    runtime::init_logging({"warn", "", env.rank()});
    int rc = 0;
    for (const char* t : {"mpi", "tcp", "mpi"}) {
      rc |= mpi::run_cluster(env, options_for(t), mpi::Layout{0, 1}, [&](Client& client) {
        compute(client, fmt::format("run_cluster over {}", t), env.size() - 2, t);
      });
    }
    if (env.rank() == 1) fmt::print("rank 1: done, {} failures\n", failures);
    return rc || failures ? 1 : 0;
  }
  if (mode == "run-options")
    return run_cluster_options(argc, argv, transport, argc > 3 ? argv[3] : "");
  if (mode == "crash" || mode == "kill") {
    auto session = mpi::initialize(argc, argv, options_for(transport));
    auto& client = session.client();
    std::vector<int> work(200, 50);
    auto running = client.map(launch_fns::nap, work);
    fmt::print("rank 1: graph running, now a worker dies\n");
    std::fflush(stdout);
    client.submit(launch_fns::die, mode == "crash" ? 1 : 2).get();
    client.gather(running);
    fmt::print("FAILED the job should have ended\n");
    return 1;
  }
  if (mode == "forever" || mode == "forever-pool") {
    auto session = mode == "forever-pool" ? mpi::initialize_pool(argc, argv, options_for(transport))
                                          : mpi::initialize(argc, argv, options_for(transport));
    auto& client = session.client();
    std::vector<int> naps(8 * session.workers(), 20);
    for (long round = 0;; ++round) {
      auto done = client.gather(client.map(launch_fns::nap, naps));
      if (round == 0 || done.size() != naps.size())
        check(done.size() == naps.size(), "forever: a round of naps");
      if (round == 0) {
        fmt::print("rank {}: cluster up, computing until a signal\n", session.rank());
        std::fflush(stdout);
      }
    }
  }
  if (mode == "busy") {
    auto session = mpi::initialize(argc, argv, options_for(transport));
    std::vector<int> work(100, 100);
    auto running = session.client().map(launch_fns::nap, work);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    fmt::print("rank 1: leaving with work still running\n");
    return 0;  // the session's destructor shuts the cluster down
  }
  fmt::print(stderr, "unknown mode '{}'\n", mode);
  return 2;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "launch_program: {}\n", e.what());
    return 3;
  }
}
