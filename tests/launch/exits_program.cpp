// A program under `mpiexec.mpich -n 4` (taskwire::mpi::initialize: rank 0 scheduler, rank 1
// this program, ranks 2-3 workers) that leaves the job in the way exits_test.sh asks:
//   exit-client    the program calls exit(3) with its cluster up
//   leak-session   the program returns 0 from main without ending its session (leaked)
//   worker-exit    a task calls exit(5) on a worker rank
//   worker-quit    a task ends its worker rank with _exit(0): a normal status, no exit path
//   worker-kill    a task SIGKILLs its worker rank
//   program-abort  the program calls MPI_Abort(MPI_COMM_WORLD, 7) with its cluster up
//   forever        computes until the test signals or kills a rank from outside
//   slow-start     ranks 0-2 start taskwire while rank 3 sits in MPI's start-up (it matched
//                  only the environment's first collective), until the test interrupts it
// Ranks say "exits-test: rank R pid P" once up, and a task that ends its rank says
// "exits-test: rank R ends by ..." first, so that the test knows whom the job must name.
#include <taskwire/mpi.hpp>
#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/comm/mpi/mpi_hosts.hpp>

#include <fmt/format.h>
#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace exits_fns {
int rank_env() {
  const char* r = std::getenv("PMI_RANK");
  return r ? std::atoi(r) : -1;
}
int nap(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
int leave(int how) {  // 1: exit(5), 2: _exit(0), 3: SIGKILL
  const char* what[] = {"", "exit(5)", "_exit(0)", "SIGKILL"};
  fmt::print("exits-test: rank {} ends by {}\n", rank_env(), what[how]);
  std::fflush(stdout);
  if (how == 1) std::exit(5);
  if (how == 2) ::_exit(0);
  ::kill(::getpid(), SIGKILL);
  return how;
}
}  // namespace exits_fns

TASKWIRE_REGISTER(exits_fns::nap);
TASKWIRE_REGISTER(exits_fns::leave);

namespace {

using namespace taskwire;

// Rank 3 of slow-start: MPI up and MpiEnvironment's start-up collectives matched up to the
// exchange of host identities (mirrors mpi_environment.cpp: MPI_Comm_idup, the barrier and
// MPI_Comm_split_type of mpi_node(), the allgather of HostIdentity), so that the other ranks
// get as far as their wake-board names; then nothing: they wait for it in their next
// collective until the test interrupts the start-up.
void wait_for(MPI_Request& req) {
  for (int done = 0; !done;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

[[noreturn]] void sit_in_startup(int& argc, char**& argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm dup, node;
  MPI_Request req;
  MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req);
  wait_for(req);
  MPI_Ibarrier(dup, &req);
  wait_for(req);
  MPI_Comm_split_type(dup, MPI_COMM_TYPE_SHARED, 3, MPI_INFO_NULL, &node);
  int size = 0;
  MPI_Comm_size(dup, &size);
  const comm::mpi::HostIdentity mine{};  // all zero: not on anyone's host, no name to reach
  std::vector<comm::mpi::HostIdentity> all(static_cast<std::size_t>(size));
  MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, dup, &req);
  wait_for(req);
  fmt::print("exits-test: rank 3 sits in start-up\n");
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// Work in flight while the program leaves: tasks on every worker.
std::vector<Future<int>> some_work(Client& client) {
  return client.map(exits_fns::nap, std::vector<int>(40, 50));
}

int run(int argc, char** argv, const std::string& mode) {
  if (mode == "slow-start" && exits_fns::rank_env() == 3) sit_in_startup(argc, argv);
  mpi::LaunchOptions options;
  if (const char* level = std::getenv("EXITS_LOG_LEVEL")) options.log_level = level;
  const char* no_watcher = std::getenv("EXITS_NO_WATCHER");  // to compare with the old way
  options.rank_watcher = !no_watcher || !*no_watcher;
  auto session = mpi::initialize(argc, argv, options);
  auto& client = session.client();
  client.gather(client.map(exits_fns::nap, std::vector<int>(8, 1)));  // every worker is up
  if (mode == "exit-client") {
    auto running = some_work(client);
    std::exit(3);
  }
  if (mode == "leak-session") {
    auto running = some_work(client);
    new mpi::Session(std::move(session));  // as a global or leaked session would: never destroyed
    return 0;
  }
  if (mode == "worker-exit" || mode == "worker-quit" || mode == "worker-kill") {
    auto running = some_work(client);
    const int how = mode == "worker-exit" ? 1 : mode == "worker-quit" ? 2 : 3;
    client.submit(exits_fns::leave, how).get();
    client.gather(running);
    fmt::print("FAILED the job should have ended\n");
    return 1;
  }
  if (mode == "program-abort") {
    auto running = some_work(client);
    fmt::print("exits-test: rank 1 ends by MPI_Abort(7)\n");
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 7);
  }
  if (mode == "forever" || mode == "slow-start") {
    fmt::print("exits-test: cluster up\n");
    std::fflush(stdout);
    for (;;) client.gather(some_work(client));
  }
  fmt::print(stderr, "unknown mode '{}'\n", mode);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  // Every rank says who it is before the roles start (the serving ranks never return).
  fmt::print("exits-test: rank {} pid {}\n", exits_fns::rank_env(), ::getpid());
  std::fflush(stdout);
  try {
    return run(argc, argv, mode);
  } catch (const std::exception& e) {
    fmt::print(stderr, "exits_program: {}\n", e.what());
    return 4;
  }
}
