// A rank whose peer exits without GOODBYE gets an error, never a hang. Launched by ctest
// through run_expect.cmake, which checks mpiexec's exit status, time and output:
//   crash      rank 1 aborts: the launcher ends the job, non-zero, promptly
//   exit0      rank 1 _Exit(0)s (no atexit, no GOODBYE); with -disable-auto-cleanup nobody
//              kills rank 0: it must see peer_lost on its comm and end the job non-zero
//   exit       rank 1 exit(0)s with its MpiEnvironment alive: the atexit hook shuts MPI
//              down in order, rank 0 reads `closed`, the job exits 0
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <future>
#include <string>

using namespace taskwire;

namespace {

int run(mpi::MpiEnvironment& env, const std::string& mode) {
  runtime::Context ctx(runtime::Config::from_env(), 1);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  if (env.rank() == 0) {
    auto ended = std::make_shared<std::promise<error_code>>();
    auto fut = ended->get_future();
    auto l = comm::listen(registry, "mpi://0", [ended](comm::CommPtr c) {
      c->async_read([c, ended](error_code ec, runtime::Message m) {
        if (ec) return ended->set_value(ec);
        c->async_write(std::move(m), [](error_code) {});
        c->async_read([c, ended](error_code ec2, runtime::Message) { ended->set_value(ec2); });
      });
    });
    env.barrier();
    if (fut.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      fmt::print("rank 0: HANG: no error within 60 s\n");
      return 3;
    }
    fmt::print("rank 0: read ended: {}\n", fut.get().message());
    std::fflush(stdout);
    return 0;
  }
  env.barrier();
  auto c = comm::connect(registry, "mpi://0");
  comm::write_sync(c, runtime::Message({runtime::Frame(std::string_view("ping"))}));
  comm::read_sync(c);
  fmt::print("rank 1: connected, now: {}\n", mode);
  std::fflush(stdout);
  if (mode == "crash") std::abort();
  if (mode == "exit0") std::_Exit(0);
  std::exit(0);  // `exit`: the environment, context and comm are all still alive
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "crash";
  // On the heap: rank 1 leaves it to the exit path under test; rank 0 deletes it, which
  // ends the job with MPI_Abort (naming the rank) when its peer died without GOODBYE.
  auto* env = new mpi::MpiEnvironment(argc, argv);
  if (env->size() != 2) {
    fmt::print(stderr, "run with -n 2\n");
    return 2;
  }
  const int rc = run(*env, mode);
  delete env;
  return rc;
}
