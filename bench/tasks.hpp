#pragma once
#include <taskwire/scheduler/scheduler_state.hpp>

#include <string>
#include <vector>

namespace taskwire::bench {

struct TasksOptions {
  std::vector<std::string> backends{"tcp"};  ///< tcp, inproc
  int workers = 2;                           ///< single-thread workers
  int independent = 10'000;                  ///< tasks in the map workload
  int chain = 1'000;                         ///< links in the chain workload
  int fan_in = 10'000;                       ///< leaves of the fan-in tree reduce (0: skip it)
  int roundtrips = 300;                      ///< submit(noop).get() repetitions
  int repeats = 3;                           ///< runs per workload; the median is reported
  bool pool = false;  ///< under mpiexec: the scheduler inside the client's rank (pool mode)
  int nthreads = 1;   ///< under mpiexec: threads per worker rank
  /// Alone only: "off" (no HTTP dashboards), "on" (the scheduler's and every worker's, each
  /// /metrics scraped once a second), or "compare": each repeat runs a fresh cluster without
  /// and one with them, in alternating order, and prints both medians and their ratio.
  std::string dashboard = "off";
  /// Alone only: the scheduler's placement policy (--no-work-stealing, --short-task-cover).
  scheduler::SchedulerOptions scheduler;
  std::string csv;
};

/// Scheduler, workers and client on one machine (each on its own io thread), running the
/// independent-map, chain, fan-in (leaves then a binary tree of adds, the sum checked) and
/// submit-get round-trip workloads; a fan-in of L leaves counts as 2L - 1 tasks. Prints a
/// table and appends CSV rows backend,workload,tasks,seconds,tasks_per_s,per_task_us.
/// Returns an exit code.
int run_tasks(const TasksOptions& options);

}  // namespace taskwire::bench
