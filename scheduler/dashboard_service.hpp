#pragma once
// The scheduler's HTTP dashboard when DashboardOptions::enabled: the recorder fed on the
// scheduler's strand, the loop-lag probe of that strand and the HTTP server (on strands of
// its own). A request's facts are copied on the scheduler's strand (no walk over the tasks)
// and rendered back off it (scheduler_dashboard.hpp). Not installed API.
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/http/http_server.hpp>
#include <taskwire/http/loop_lag.hpp>
#include <taskwire/scheduler/scheduler_dashboard.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace taskwire::scheduler {

class DashboardService {
 public:
  /// `state` is read on `strand` only; `started` is when the scheduler started (uptime).
  DashboardService(comm::Registry& registry, asio::strand<asio::any_io_executor> strand,
                   const SchedulerState& state, DashboardOptions options,
                   std::chrono::steady_clock::time_point started);
  DashboardService(const DashboardService&) = delete;
  DashboardService& operator=(const DashboardService&) = delete;

  /// Starts serving when enabled (else does nothing). `owner` owns this service: a request
  /// touches it only while `owner` can be locked, and is answered 503 once it cannot.
  /// Throws boost::system::system_error when the address cannot be listened on.
  void start(std::weak_ptr<const void> owner);
  /// Stops the server and the probe; any thread. Idempotent.
  void stop();
  /// "http://HOST:PORT" once started; "" when off.
  std::string url() const { return http_ ? http_->url() : std::string(); }
  /// What tasks the dashboard records; null when off. On the scheduler's strand.
  DashboardRecorder* recorder() { return recorder_.get(); }

 private:
  // On the HTTP connection's strand, while the owner is held: the rest goes to the strand.
  void serve(const std::weak_ptr<const void>& owner, const http::RoutedRequest& routed,
             http::HttpRespond respond);
  // On the scheduler's strand, while the owner is held.
  SchedulerFacts collect(const http::RoutedRequest& routed) const;

  comm::Registry& registry_;
  asio::strand<asio::any_io_executor> strand_;
  const SchedulerState& state_;
  DashboardOptions options_;
  std::chrono::steady_clock::time_point started_;
  std::unique_ptr<DashboardRecorder> recorder_;
  std::unique_ptr<http::HttpServer> http_;
  std::shared_ptr<http::LoopLagProbe> lag_;
};

}  // namespace taskwire::scheduler
