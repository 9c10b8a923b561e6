#pragma once
// Runs the worker's tasks: on its thread pool (Executor), or inline on its event loop for
// functions measured to be very short (InlineRunPolicy; task_runner.cpp says why), and hands
// the results back to the state machine in batches. execute() and the inline results are on
// the worker's strand; pool threads queue their results for it. Not installed API.
#include <taskwire/worker/dashboard_service.hpp>
#include <taskwire/worker/executor.hpp>
#include <taskwire/worker/inline_run_policy.hpp>
#include <taskwire/worker/worker_core.hpp>

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace taskwire::worker {

class TaskRunner {
 public:
  TaskRunner(WorkerCore& core, WorkerActions& actions, DashboardService& dashboard);
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;

  /// Starts the thread pool.
  void start() { executor_.start(); }
  /// Any thread: no queued task starts any more (returns how many were dropped); running ones
  /// finish and their results go nowhere.
  std::size_t request_stop() { return executor_.request_stop(); }
  /// Waits for the running tasks and joins the pool. Not from a pool thread.
  void join() { executor_.stop(); }

  // ---- on the strand ----
  /// A handler of the strand begins: the budget for inline runs starts now.
  void begin_handler() { inline_runs_.begin_handler(); }
  /// Runs `task` inline (its result waits for take_inline_results()) or on the pool (its
  /// result reaches WorkerActions::handle() with others that finished meanwhile).
  void execute(Execute task);
  bool has_inline_results() const { return !inline_done_.empty(); }
  /// The results of the tasks run inline since the last call, for the state machine.
  std::vector<Event> take_inline_results() { return std::exchange(inline_done_, {}); }
  void drop_inline_results() { inline_done_.clear(); }

 private:
  Event run_task(Execute& task);
  void record_duration(const std::string& function, const Event& result, bool ran_inline);
  void log_result(const std::string& function, const Event& result) const;
  void on_executed(std::string function, Event result);
  void drain_executed();

  WorkerCore& core_;
  WorkerActions& actions_;
  DashboardService& dashboard_;
  Executor executor_;
  InlineRunPolicy inline_runs_;
  std::vector<Event> inline_done_;  ///< results of tasks run inline, for the handler

  // Results from pool threads, waiting for the strand (drain_executed).
  struct Executed {
    std::string function;
    Event result;
  };
  std::mutex executed_mu_;
  std::vector<Executed> executed_;
  bool executed_posted_ = false;
};

}  // namespace taskwire::worker
