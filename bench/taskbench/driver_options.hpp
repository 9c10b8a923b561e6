#pragma once
// The command line of taskwire-taskbench: the driver's own `--` flags, taken out of argv, and
// TaskBench's single-dash flags (-steps, -width, -type, ...), left for TaskBench's App.
#include <taskwire/launch/mpi/launch.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::taskbench {

struct DriverOptions {
  /// How workers and the client reach the scheduler (--backend mpi|tcp).
  mpi::Transport transport = mpi::Transport::mpi;
  /// Threads running tasks on each worker rank (--nthreads).
  unsigned nthreads = 1;
  /// Timed executions of the whole graph set; the last is reported (--runs). Two, as
  /// TaskBench's MPI implementation does: the first warms up connections and the workers'
  /// measure of how long a task runs.
  int runs = 2;
  /// Most tasks submitted and not yet known to be done (--window): bounds the scheduler's
  /// graph and the results kept for the client (see run_graphs.hpp).
  std::size_t window_tasks = 16384;
  /// Each graph point runs on one worker, point p on worker p mod W (--pin-points): owner
  /// computes, through SubmitOptions::workers, instead of the scheduler's placement.
  bool pin_points = false;
  /// Log level of every rank (--log-level).
  std::string log_level = "warn";
  bool help = false;
  /// argv[0] and TaskBench's flags, in order: what App parses.
  std::vector<std::string> taskbench_args;
};

/// Splits argv. Throws std::invalid_argument with a sentence for an unknown flag (of either
/// kind: TaskBench's App would silently ignore a misspelt one), a flag missing its value, or
/// a bad value of the driver's own flags. TaskBench's values are checked by App itself.
DriverOptions parse_driver_options(int argc, const char* const* argv);

/// The driver's --help text (TaskBench's own flags are listed by its App, after it).
std::string driver_usage(std::string_view program);

}  // namespace taskwire::taskbench
