#pragma once
// The scheduler's side of the dashboard: what it records as tasks finish (the task stream,
// recent errors), the snapshot of facts it copies on its strand for one HTTP request, and
// how a snapshot renders (Prometheus text, JSON) off the strand. The HTTP server itself is
// http/http_server.hpp; SchedulerServer wires them together.
#include <taskwire/comm/core/backend_counters.hpp>
#include <taskwire/http/dashboard_page.hpp>
#include <taskwire/http/task_stream.hpp>
#include <taskwire/runtime/protocol.hpp>
#include <taskwire/scheduler/dashboard_options.hpp>
#include <taskwire/scheduler/scheduler_state.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::scheduler {


struct TaskErrorRecord {
  std::string key, function, worker, message;
  double time = 0;  ///< seconds since the scheduler started
};

/// On the scheduler's strand only.
class DashboardRecorder {
 public:
  explicit DashboardRecorder(const DashboardOptions& options)
      : stream_(options.task_stream_length), max_errors_(options.recent_errors) {}
  /// Whether `task`, finishing at `now` (seconds), gets a task-stream entry (http::StreamRate:
  /// tasks with transfers always). Errors (task_erred) are always recorded.
  bool records(const protocol::TaskFinished& task, double now) {
    return rate_.admits(now, brought_transfer(task));
  }
  /// Whether `task`'s dependencies came from peers (its entry then shows the transfer).
  static bool brought_transfer(const protocol::TaskFinished& task) {
    return task.transfer_bytes > 0 || task.transfer_s > 0;
  }
  /// Finished tasks left out of the task stream by records().
  std::uint64_t unrecorded() const noexcept { return rate_.unrecorded(); }
  /// A task run, and before it the transfers that brought its dependencies to `worker`.
  void task_finished(std::string_view worker, int nthreads, std::string_view function,
                     const protocol::TaskFinished& task, double now);
  void task_erred(std::string_view worker, int nthreads, std::string_view key,
                  std::string_view function, std::string_view message, double now);
  void worker_removed(const std::string& worker) { stream_.forget_worker(worker); }
  const http::TaskStream& stream() const { return stream_; }
  const std::deque<TaskErrorRecord>& errors() const { return errors_; }

 private:
  http::TaskStream stream_;
  std::size_t max_errors_;
  std::deque<TaskErrorRecord> errors_;
  http::StreamRate rate_;
};

/// A copy of what one request needs, taken on the strand (cheap: no walk over tasks).
struct SchedulerFacts {
  double uptime = 0;
  double loop_lag = 0, loop_lag_max = 0;
  TaskCounts tasks;
  std::vector<std::pair<std::string, FunctionMetrics>> functions;
  std::vector<WorkerInfo> workers;
  std::size_t clients = 0;
  std::vector<http::TaskStreamEntry> stream;  ///< json requests only
  std::uint64_t last_seq = 0;
  std::uint64_t stream_unrecorded = 0;  ///< finished tasks left out of the task stream
  std::vector<TaskErrorRecord> errors;  ///< json requests only
  std::vector<comm::BackendCounter> backend_counters;  ///< the registry's (Registry::counters)
};

SchedulerFacts collect_facts(const SchedulerState& state, const DashboardRecorder* recorder,
                             const http::RoutedRequest& request);
/// Off the strand: /metrics or /json/PART.
http::HttpResponse render(const SchedulerFacts& facts, const http::RoutedRequest& request);
/// Routes a request to the scheduler's dashboard (its /json/NAME parts).
http::RoutedRequest route_scheduler_request(const http::HttpRequest& request);

}  // namespace taskwire::scheduler
