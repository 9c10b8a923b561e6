#pragma once
// The worker's side of the dashboard: counters and the task stream it records on its strand
// as tasks finish and transfers arrive, the snapshot one HTTP request copies there, and how
// that renders (Prometheus text, JSON) off the strand. Not installed API.
#include <taskwire/comm/core/backend_counters.hpp>
#include <taskwire/http/dashboard_page.hpp>
#include <taskwire/http/task_stream.hpp>
#include <taskwire/runtime/histogram.hpp>
#include <taskwire/worker/data_store.hpp>
#include <taskwire/worker/worker_events.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::worker {

struct WorkerFunctionMetrics {
  std::uint64_t completed = 0, erred = 0;
  runtime::DurationHistogram durations;
};
struct TransferCounts {
  std::uint64_t count = 0, bytes = 0;
};
struct WorkerTaskError {
  std::string key, function, message;
  double time = 0;
};

/// On the worker's strand only.
class WorkerDashboardRecorder {
 public:
  WorkerDashboardRecorder(std::size_t task_stream_length, std::size_t recent_errors)
      : stream_(task_stream_length), max_errors_(recent_errors) {}
  double now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  /// A task run that ended at `stop` (seconds, as now()); `error` when it raised.
  void task_done(std::string_view worker, int nthreads, std::string_view key,
                 std::string_view function, double duration, std::int64_t nbytes,
                 const TaskRun& run, const std::string* error, double stop);
  /// A data_reply from `peer` (its address: the transport is its scheme) that took from
  /// `sent` (seconds, as now()) until now. The task stream shows it on `self`'s row (this
  /// worker's address), where the data arrived, as the scheduler's stream does.
  void transfer_done(std::string_view self, std::string_view peer, std::string_view first_key,
                     std::size_t keys, std::uint64_t bytes, double sent);

  const http::TaskStream& stream() const { return stream_; }
  /// Task runs left out of the task stream (past http::StreamRate's rate).
  std::uint64_t unrecorded() const noexcept { return rate_.unrecorded(); }
  const std::deque<WorkerTaskError>& errors() const { return errors_; }
  const std::map<std::string, WorkerFunctionMetrics, std::less<>>& functions() const { return functions_; }
  const std::map<std::string, TransferCounts, std::less<>>& transfers() const { return transfers_; }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  http::TaskStream stream_;
  http::StreamRate rate_;
  std::size_t max_errors_;
  std::deque<WorkerTaskError> errors_;
  std::map<std::string, WorkerFunctionMetrics, std::less<>> functions_;
  std::map<std::string, TransferCounts, std::less<>> transfers_;  ///< by scheme
};

/// A copy of what one request needs, taken on the strand.
struct WorkerFacts {
  std::string name, address;
  int nthreads = 1;
  double uptime = 0, loop_lag = 0, loop_lag_max = 0;
  std::size_t tasks = 0, executing = 0, ready = 0, fetching = 0, keys = 0;
  std::uint64_t memory_bytes = 0;
  DataStoreCounts store;  ///< memory, spilled, spills
  std::uint64_t memory_limit = 0, process_bytes = 0, process_peak_bytes = 0;
  bool paused = false;
  std::map<std::string, WorkerFunctionMetrics, std::less<>> functions;
  std::map<std::string, TransferCounts, std::less<>> transfers;
  std::vector<http::TaskStreamEntry> stream;  ///< json requests only
  std::uint64_t last_seq = 0;
  std::uint64_t stream_unrecorded = 0;  ///< task runs left out of the task stream
  std::vector<WorkerTaskError> errors;  ///< json requests only
  std::vector<comm::BackendCounter> backend_counters;  ///< the registry's (Registry::counters)
};

/// Copies the recorder's part of the facts (the caller fills in the worker's own).
void collect_recorded(const WorkerDashboardRecorder& recorder, const http::RoutedRequest& request,
                      WorkerFacts& facts);
http::RoutedRequest route_worker_request(const http::HttpRequest& request);
/// Off the strand: /metrics or /json/PART.
http::HttpResponse render(const WorkerFacts& facts, const http::RoutedRequest& request);

}  // namespace taskwire::worker
