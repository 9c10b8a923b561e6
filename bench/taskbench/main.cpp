// taskwire-taskbench: TaskBench (StanfordLegion/task-bench) on a taskwire cluster launched
// whole by `mpiexec.mpich -n K` (rank 0 scheduler, rank 1 client, ranks 2.. workers).
// Every rank parses the same argv into the same TaskBench App before the cluster starts, so a
// worker's task finds its graph by index (point_task.hpp); the client submits and times the
// graphs and prints TaskBench's report (run_graphs.hpp).
#include "bench/taskbench/driver_options.hpp"
#include "bench/taskbench/point_task.hpp"
#include "bench/taskbench/run_graphs.hpp"

#include <taskwire/launch/mpi/launch.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>
#include <taskwire/runtime/log.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

// Hydra's rank, known before MPI_Init: only the first rank prints what every rank would.
bool first_rank() {
  const char* rank = std::getenv("PMI_RANK");
  return !rank || std::atoi(rank) == 0;
}

[[noreturn]] void show_help(const char* program) {
  if (!first_rank()) std::exit(0);
  fmt::print("{}", taskwire::taskbench::driver_usage(program));
  std::fflush(stdout);
  char help[] = "-h";
  char* argv[] = {const_cast<char*>(program), help, nullptr};
  App app(2, argv);  // prints TaskBench's flags and exits 0
  std::exit(0);
}

// C-style argv for App, which keeps no pointer into it.
std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace taskwire;
  taskbench::DriverOptions options;
  try {
    options = taskbench::parse_driver_options(argc, argv);
    // run_cluster leaves logging as it finds it (LaunchOptions::log_level is left empty).
    if (!options.help) runtime::init_logging({options.log_level, "", -1});
  } catch (const std::exception& e) {
    if (first_rank())
      fmt::print(stderr, "taskwire-taskbench: {} (see --help)\n", e.what());
    return 2;
  }
  if (options.help) show_help(argv[0]);
  auto app_argv = c_argv(options.taskbench_args);
  App app(static_cast<int>(app_argv.size()) - 1, app_argv.data());  // a bad value aborts, saying why
  taskbench::set_task_graphs(&app.graphs);

  mpi::MpiEnvironment env;
  if (env.size() < 3) {
    if (env.rank() == 0)
      fmt::print(stderr,
                 "taskwire-taskbench: needs at least 3 MPI ranks (scheduler, client, workers), "
                 "got {}: run `mpiexec.mpich -n 4 {} ...`\n",
                 env.size(), argv[0]);
    return 2;
  }
  mpi::LaunchOptions launch;
  launch.transport = options.transport;
  launch.nthreads = options.nthreads;
  bool ok = true;
  int rc = 1;
  try {
    rc = mpi::run_cluster(env, launch, mpi::Layout{0, 1}, [&](Client& client) {
      fmt::print("taskwire-taskbench: backend {}, {} workers x {} thread(s)\n",
                 mpi::to_string(options.transport), env.size() - 2, options.nthreads);
      ok = taskbench::run_graphs(client, app,
                                 {options.runs, options.window_tasks, options.pin_points});
    });
  } catch (const std::exception& e) {
    fmt::print(stderr, "taskwire-taskbench: rank {}: {}\n", env.rank(), e.what());
    return 1;
  }
  return rc != 0 ? rc : ok ? 0 : 1;
}
