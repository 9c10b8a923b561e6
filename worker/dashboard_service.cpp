#include <taskwire/worker/dashboard_service.hpp>

#include <taskwire/http/daemon_answers.hpp>
#include <taskwire/runtime/process_info.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::worker {

void DashboardService::start() {
  if (!core_.options.dashboard) return;
  recorder_ = std::make_unique<WorkerDashboardRecorder>(5000, 100);
  lag_ = http::LoopLagProbe::start(core_.strand, std::chrono::milliseconds(500));
  try {
    http_ = std::make_unique<http::HttpServer>(
        core_.context.executor(), http::parse_listen_address(core_.options.dashboard_address),
        [this, weak = core_.owner](const http::HttpRequest& r, http::HttpRespond respond) {
          const auto routed = route_worker_request(r);
          if (auto answer = http::stateless_response(routed)) return respond(std::move(*answer));
          const auto held = weak.lock();
          if (!held) return respond(http::plain(503, "shutting down\n"));
          serve(routed, std::move(respond));
        });
    http_->start();
    spdlog::info("worker {}: dashboard at {}", core_.name, http_->url());
  } catch (const std::exception& e) {
    // The dashboard is an aid: a worker without one still runs tasks.
    spdlog::warn("worker {}: no dashboard ({}): {}", core_.name, core_.options.dashboard_address,
                 e.what());
    http_.reset();
  }
}

void DashboardService::stop() {
  if (http_) http_->stop();
  if (lag_) lag_->stop();
}

void DashboardService::record_task_done(const std::string& function, const Event& result) {
  const auto nthreads = static_cast<int>(core_.options.nthreads);
  if (const auto* s = std::get_if<ExecuteSuccess>(&result))
    recorder_->task_done(core_.address, nthreads, s->key, function, s->duration_s,
                         static_cast<std::int64_t>(s->result.size()), s->run, nullptr,
                         recorder_->now());
  else if (const auto* f = std::get_if<ExecuteFailure>(&result))
    recorder_->task_done(core_.address, nthreads, f->key, function, f->duration_s, 0, f->run,
                         &f->message, recorder_->now());
}

void DashboardService::record_transfer(const std::string& peer, double seconds,
                                       const std::vector<Key>& keys,
                                       std::span<const runtime::Frame> frames) {
  std::uint64_t bytes = 0;
  for (const auto& f : frames) bytes += f.size();
  const double sent = recorder_->now() - seconds;
  recorder_->transfer_done(core_.address, peer,
                           keys.empty() ? std::string_view() : std::string_view(keys.front()),
                           keys.size(), bytes, sent);
}

WorkerFacts DashboardService::collect(const http::RoutedRequest& request) const {
  WorkerFacts f;
  f.name = core_.name;
  f.address = core_.address;
  f.nthreads = static_cast<int>(core_.options.nthreads);
  if (const auto& state = core_.state) {
    f.tasks = state->task_count();
    f.executing = state->executing_count();
    f.ready = state->ready_count();
    f.fetching = state->fetch_count();
    f.paused = state->paused();
  }
  f.store = core_.data->counts();
  f.memory_bytes = core_.data->nbytes();
  f.keys = f.store.keys;
  f.memory_limit = core_.options.memory.limit;
  f.process_bytes = runtime::resident_set_bytes();
  f.process_peak_bytes = runtime::peak_resident_set_bytes();
  if (recorder_) collect_recorded(*recorder_, request, f);
  if (lag_) f.loop_lag = lag_->last_seconds(), f.loop_lag_max = lag_->max_seconds();
  f.backend_counters = core_.registry.counters();
  return f;
}

void DashboardService::serve(const http::RoutedRequest& routed, http::HttpRespond respond) {
  asio::post(core_.strand, [this, weak = core_.owner, routed,
                            respond = std::move(respond)]() mutable {
    const auto held = weak.lock();
    if (!held) return respond(http::plain(503, "shutting down\n"));
    auto facts = std::make_shared<WorkerFacts>(collect(routed));
    asio::post(core_.context.executor(),
               [facts, routed, respond = std::move(respond)] { respond(render(*facts, routed)); });
  });
}

}  // namespace taskwire::worker
