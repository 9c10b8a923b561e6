#pragma once
// The worker's HTTP dashboard when WorkerOptions::dashboard: the recorder fed on the worker's
// strand (tasks done, transfers from peers), the loop-lag probe of that strand and the HTTP
// server (on strands of its own). A request's facts are copied on the worker's strand and
// rendered back off it (worker_dashboard.hpp). Not installed API.
#include <taskwire/http/http_server.hpp>
#include <taskwire/http/loop_lag.hpp>
#include <taskwire/worker/worker_core.hpp>
#include <taskwire/worker/worker_dashboard.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace taskwire::worker {

class DashboardService {
 public:
  explicit DashboardService(WorkerCore& core) : core_(core) {}
  DashboardService(const DashboardService&) = delete;
  DashboardService& operator=(const DashboardService&) = delete;

  /// Starts serving when enabled (else does nothing); a dashboard that cannot listen is
  /// logged and left off: the worker runs without it.
  void start();
  /// Stops the server and the probe. Idempotent.
  void stop();
  /// "http://HOST:PORT" once started; "" when off.
  std::string url() const { return http_ ? http_->url() : std::string(); }

  // ---- on the strand ----
  /// Whether tasks and transfers are recorded (the dashboard is on).
  bool recording() const { return recorder_ != nullptr; }
  /// A task's run ended with `result` (an ExecuteSuccess or ExecuteFailure). Recording only.
  void record_task_done(const std::string& function, const Event& result);
  /// `keys` arrived from `peer` as `frames`, `seconds` after they were asked. Recording only.
  void record_transfer(const std::string& peer, double seconds, const std::vector<Key>& keys,
                       std::span<const runtime::Frame> frames);

 private:
  // On the HTTP connection's strand: the facts are copied on the worker's strand.
  void serve(const http::RoutedRequest& routed, http::HttpRespond respond);
  WorkerFacts collect(const http::RoutedRequest& request) const;

  WorkerCore& core_;
  std::unique_ptr<WorkerDashboardRecorder> recorder_;
  std::unique_ptr<http::HttpServer> http_;
  std::shared_ptr<http::LoopLagProbe> lag_;
};

}  // namespace taskwire::worker
