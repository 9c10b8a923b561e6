// The worker's dashboard wiring: its HTTP server, what it records on the strand, and the
// facts one request copies there (worker_dashboard.hpp renders them).
#include <taskwire/worker/worker_server_impl.hpp>

#include <taskwire/runtime/process_info.hpp>

#include <taskwire/http/daemon_answers.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::worker {

void Worker::Impl::start_dashboard() {
  if (!options_.dashboard) return;
  recorder_ = std::make_unique<WorkerDashboardRecorder>(5000, 100);
  lag_ = http::LoopLagProbe::start(strand_, std::chrono::milliseconds(500));
  try {
    http_ = std::make_unique<http::HttpServer>(
        context_.executor(), http::parse_listen_address(options_.dashboard_address),
        [weak = weak_from_this()](const http::HttpRequest& r, http::HttpRespond respond) {
          serve_http(weak, r, std::move(respond));
        });
    http_->start();
    spdlog::info("worker {}: dashboard at {}", name_, http_->url());
  } catch (const std::exception& e) {
    // The dashboard is an aid: a worker without one still runs tasks.
    spdlog::warn("worker {}: no dashboard ({}): {}", name_, options_.dashboard_address, e.what());
    http_.reset();
  }
}

void Worker::Impl::stop_dashboard() {
  if (http_) http_->stop();
  if (lag_) lag_->stop();
}

void Worker::Impl::record_task_done(const std::string& function, const Event& result) {
  if (const auto* s = std::get_if<ExecuteSuccess>(&result))
    recorder_->task_done(address_, static_cast<int>(options_.nthreads), s->key, function,
                         s->duration_s, static_cast<std::int64_t>(s->result.size()), s->run,
                         nullptr, recorder_->now());
  else if (const auto* f = std::get_if<ExecuteFailure>(&result))
    recorder_->task_done(address_, static_cast<int>(options_.nthreads), f->key, function,
                         f->duration_s, 0, f->run, &f->message, recorder_->now());
}

void Worker::Impl::record_transfer(const PeerLink& link, double seconds,
                                   const std::vector<Key>& keys,
                                   std::span<const runtime::Frame> frames) {
  std::uint64_t bytes = 0;
  for (const auto& f : frames) bytes += f.size();
  const double sent = recorder_->now() - seconds;
  recorder_->transfer_done(address_, link.address, keys.empty() ? std::string_view() : std::string_view(keys.front()),
                           keys.size(), bytes, sent);
}

WorkerFacts Worker::Impl::collect_facts(const http::RoutedRequest& request) const {
  WorkerFacts f;
  f.name = name_;
  f.address = address_;
  f.nthreads = static_cast<int>(options_.nthreads);
  if (state_) {
    f.tasks = state_->task_count();
    f.executing = state_->executing_count();
    f.ready = state_->ready_count();
    f.fetching = state_->fetch_count();
    f.paused = state_->paused();
  }
  f.store = data_->counts();
  f.memory_bytes = data_->nbytes();
  f.keys = f.store.keys;
  f.memory_limit = options_.memory.limit;
  f.process_bytes = runtime::resident_set_bytes();
  f.process_peak_bytes = runtime::peak_resident_set_bytes();
  if (recorder_) collect_recorded(*recorder_, request, f);
  if (lag_) f.loop_lag = lag_->last_seconds(), f.loop_lag_max = lag_->max_seconds();
  f.backend_counters = registry_.counters();
  return f;
}

// On the HTTP connection's strand; the facts are copied on the worker's strand and rendered
// back off it.
void Worker::Impl::serve_http(const std::weak_ptr<Impl>& weak, const http::HttpRequest& request,
                              http::HttpRespond respond) {
  const auto routed = route_worker_request(request);
  if (auto answer = http::stateless_response(routed)) return respond(std::move(*answer));
  auto self = weak.lock();
  if (!self) return respond(http::plain(503, "shutting down\n"));
  asio::post(self->strand_, [weak, routed, respond = std::move(respond)]() mutable {
    auto self = weak.lock();
    if (!self) return respond(http::plain(503, "shutting down\n"));
    auto facts = std::make_shared<WorkerFacts>(self->collect_facts(routed));
    asio::post(self->context_.executor(),
               [facts, routed, respond = std::move(respond)] { respond(render(*facts, routed)); });
  });
}

}  // namespace taskwire::worker
