#pragma once
// The client side of taskwire-taskbench: submits every TaskBench graph of an App to a
// taskwire cluster, one task per (graph, timestep, point) whose arguments are the futures of
// its dependencies, times the whole execution and prints TaskBench's report.
//
// Memory stays bounded: the client holds a future only while it needs it. A task's future is
// let go of once the next timestep, which depends on it, is submitted (the scheduler keeps
// the data for its dependents), except for tasks that nothing later depends on, the last
// timestep, and every task of one timestep in `window/4`'s worth (checkpoints): those are
// held until the client has waited for them, which it does once `window` tasks have been
// submitted after them. So at most about `window` tasks are in the scheduler at once, and
// every task is known to be done when the held ones are (each task is an ancestor of one).
#include "core.h"

#include <taskwire/client/client.hpp>

#include <cstddef>

namespace taskwire::taskbench {

struct RunOptions {
  int runs = 2;                     ///< timed runs; the last is reported
  std::size_t window_tasks = 16384;  ///< see above
  /// Point p of every graph runs on worker p mod W (SubmitOptions::workers, the workers
  /// scheduler_info() lists when the run starts): placement by owner, not by the scheduler.
  bool pin_points = false;
};

/// Runs every graph of `app` `runs` times through `client` and prints, on stdout, App's
/// configuration, then TaskBench's report (App::report_timing) for the last run. After each
/// run, checks the outputs of every graph's last timestep (fetched from the workers) against
/// what TaskBench writes. Returns false, after saying why on stderr, when a task failed or an
/// output is wrong.
bool run_graphs(Client& client, const App& app, const RunOptions& options);

}  // namespace taskwire::taskbench
