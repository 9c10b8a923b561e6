#include <taskwire/scheduler/dashboard_service.hpp>

#include <taskwire/http/daemon_answers.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::scheduler {

DashboardService::DashboardService(comm::Registry& registry,
                                   asio::strand<asio::any_io_executor> strand,
                                   const SchedulerState& state, DashboardOptions options,
                                   std::chrono::steady_clock::time_point started)
    : registry_(registry), strand_(std::move(strand)), state_(state),
      options_(std::move(options)), started_(started) {}

void DashboardService::start(std::weak_ptr<const void> owner) {
  if (!options_.enabled) return;
  recorder_ = std::make_unique<DashboardRecorder>(options_);
  lag_ = http::LoopLagProbe::start(strand_, std::chrono::milliseconds(500));
  // The handler holds `this` only through `owner` (the service lives as long as it does).
  http_ = std::make_unique<http::HttpServer>(
      registry_.context().executor(), http::parse_listen_address(options_.address),
      [this, owner](const http::HttpRequest& r, http::HttpRespond respond) {
        const auto routed = route_scheduler_request(r);
        if (auto answer = http::stateless_response(routed)) return respond(std::move(*answer));
        if (const auto held = owner.lock()) return serve(owner, routed, std::move(respond));
        respond(http::plain(503, "shutting down\n"));
      });
  http_->start();
  spdlog::info("scheduler: dashboard at {}", http_->url());
}

void DashboardService::stop() {
  if (http_) http_->stop();
  if (lag_) lag_->stop();
}

void DashboardService::serve(const std::weak_ptr<const void>& owner,
                             const http::RoutedRequest& routed, http::HttpRespond respond) {
  asio::post(strand_, [this, owner, routed, respond = std::move(respond)]() mutable {
    const auto held = owner.lock();
    if (!held) return respond(http::plain(503, "shutting down\n"));
    auto facts = std::make_shared<SchedulerFacts>(collect(routed));
    asio::post(registry_.context().executor(),
               [facts, routed, respond = std::move(respond)] { respond(render(*facts, routed)); });
  });
}

SchedulerFacts DashboardService::collect(const http::RoutedRequest& routed) const {
  auto facts = collect_facts(state_, recorder_.get(), routed);
  facts.uptime = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  facts.loop_lag = lag_ ? lag_->last_seconds() : 0;
  facts.loop_lag_max = lag_ ? lag_->max_seconds() : 0;
  facts.backend_counters = registry_.counters();
  return facts;
}

}  // namespace taskwire::scheduler
