#include <taskwire/worker/worker_dashboard.hpp>

#include <taskwire/http/daemon_answers.hpp>
#include <taskwire/http/prometheus_text.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace taskwire::worker {

void WorkerDashboardRecorder::task_done(std::string_view worker, int nthreads,
                                        std::string_view key, std::string_view function,
                                        double duration, std::int64_t nbytes,
                                        const TaskRun& run, const std::string* error,
                                        double stop) {
  const double transfer_seconds = run.transfer_stop - run.transfer_start;
  const bool brought_transfer = run.transfer_bytes > 0 || transfer_seconds > 0;
  if (rate_.admits(stop, error || brought_transfer))
    stream_.record_task({.key = key, .function = function, .worker = worker,
                         .nthreads = nthreads, .thread = run.thread,
                         .start = stop - std::max(0.0, duration), .stop = stop,
                         .transfer_seconds = transfer_seconds, .nbytes = nbytes,
                         .erred = error != nullptr});
  auto it = functions_.find(function);
  if (it == functions_.end()) it = functions_.emplace(std::string(function), WorkerFunctionMetrics{}).first;
  it->second.durations.observe(duration);
  if (!error) {
    ++it->second.completed;
    return;
  }
  ++it->second.erred;
  if (max_errors_ == 0) return;
  if (errors_.size() == max_errors_) errors_.pop_front();
  errors_.push_back({std::string(key), std::string(function), *error, stop});
}

void WorkerDashboardRecorder::transfer_done(std::string_view self, std::string_view peer,
                                            std::string_view first_key, std::size_t keys,
                                            std::uint64_t bytes, double sent) {
  const auto end = peer.find("://");
  const std::string_view scheme = end == std::string_view::npos ? peer : peer.substr(0, end);
  auto it = transfers_.find(scheme);
  if (it == transfers_.end()) it = transfers_.emplace(std::string(scheme), TransferCounts{}).first;
  ++it->second.count;
  it->second.bytes += bytes;
  if (keys > 0) stream_.record_transfer(first_key, self, sent, now(), static_cast<std::int64_t>(bytes));
}

http::RoutedRequest route_worker_request(const http::HttpRequest& request) {
  return http::route_of(request, {"dashboard", "workers", "tasks", "functions", "task-stream",
                                  "errors", "transfers"});
}

void collect_recorded(const WorkerDashboardRecorder& recorder, const http::RoutedRequest& request,
                      WorkerFacts& f) {
  f.uptime = recorder.now();
  f.functions = recorder.functions();
  f.transfers = recorder.transfers();
  f.last_seq = recorder.stream().last_seq();
  f.stream_unrecorded = recorder.unrecorded();
  if (request.route != http::Route::json) return;
  if (request.part == "dashboard" || request.part == "task-stream")
    f.stream = recorder.stream().since(request.since);
  if (request.part == "dashboard" || request.part == "errors")
    f.errors.assign(recorder.errors().begin(), recorder.errors().end());
}

namespace {

void write_tasks(http::PrometheusText& p, const WorkerFacts& f) {
  p.single("taskwire_worker_tasks", "gauge", "Tasks this worker knows of (any state).",
           static_cast<double>(f.tasks));
  p.family("taskwire_worker_tasks_by_state", "gauge", "Tasks executing, ready to run, fetching.");
  p.sample("taskwire_worker_tasks_by_state", static_cast<double>(f.executing), {{"state", "executing"}});
  p.sample("taskwire_worker_tasks_by_state", static_cast<double>(f.ready), {{"state", "ready"}});
  p.sample("taskwire_worker_tasks_by_state", static_cast<double>(f.fetching), {{"state", "fetch"}});
  std::uint64_t completed = 0, erred = 0;
  for (const auto& [name, m] : f.functions) completed += m.completed, erred += m.erred;
  p.single("taskwire_worker_tasks_completed_total", "counter", "Tasks this worker ran to a result.",
           static_cast<double>(completed));
  p.single("taskwire_worker_tasks_erred_total", "counter", "Tasks that raised on this worker.",
           static_cast<double>(erred));
  p.family("taskwire_worker_task_duration_seconds", "histogram", "How long tasks ran, by function.");
  for (const auto& [name, m] : f.functions)
    p.histogram("taskwire_worker_task_duration_seconds", m.durations, {{"function", name}});
}

void write_transfers(http::PrometheusText& p, const WorkerFacts& f) {
  p.family("taskwire_worker_transfers_total", "counter",
           "Replies with dependencies fetched from peer workers, by transport.");
  for (const auto& [scheme, t] : f.transfers)
    p.sample("taskwire_worker_transfers_total", static_cast<double>(t.count), {{"transport", scheme}});
  p.family("taskwire_worker_transfer_bytes_total", "counter",
           "Bytes of dependencies fetched from peer workers, by transport.");
  for (const auto& [scheme, t] : f.transfers)
    p.sample("taskwire_worker_transfer_bytes_total", static_cast<double>(t.bytes), {{"transport", scheme}});
}

void write_memory(http::PrometheusText& p, const WorkerFacts& f) {
  auto gauge = [&p](const char* name, const char* help, double value) {
    p.single(name, "gauge", help, value);
  };
  auto counter = [&p](const char* name, const char* help, double value) {
    p.single(name, "counter", help, value);
  };
  const auto& s = f.store;
  gauge("taskwire_worker_managed_memory_bytes",
        "Bytes of results and dependencies held in memory (spilled ones not counted).",
        static_cast<double>(s.memory_bytes));
  gauge("taskwire_worker_live_bytes",
        "Of the managed memory, results held as the objects tasks returned or decoded.",
        static_cast<double>(s.live_bytes));
  gauge("taskwire_worker_serialized_bytes",
        "Of the managed memory, results held as bytes (received or read back from disk, not "
        "read by a task here yet).",
        static_cast<double>(s.serialized_bytes));
  gauge("taskwire_worker_spilled_bytes", "Bytes of results spilled to disk now.",
        static_cast<double>(s.spilled_bytes));
  gauge("taskwire_worker_spilled_keys", "Results spilled to disk now.",
        static_cast<double>(s.spilled_keys));
  counter("taskwire_worker_spills_total", "Results written to disk.",
          static_cast<double>(s.spills_total));
  counter("taskwire_worker_spilled_bytes_total", "Bytes written to disk.",
          static_cast<double>(s.spilled_bytes_total));
  counter("taskwire_worker_unspills_total", "Spilled results read back into memory.",
          static_cast<double>(s.unspills_total));
  counter("taskwire_worker_spill_failures_total",
          "Writes to the spill directory that failed (the result stayed in memory).",
          static_cast<double>(s.spill_failures_total));
  counter("taskwire_worker_spill_losses_total",
          "Spilled results whose file was gone, short or corrupt (reported lost, recomputed).",
          static_cast<double>(s.spill_losses_total));
  gauge("taskwire_worker_memory_limit_bytes", "The worker's memory limit; 0: none.",
        static_cast<double>(f.memory_limit));
  gauge("taskwire_worker_process_memory_bytes", "The worker process's resident set size.",
        static_cast<double>(f.process_bytes));
  gauge("taskwire_worker_process_memory_peak_bytes",
        "The worker process's peak resident set size (VmHWM).",
        static_cast<double>(f.process_peak_bytes));
  gauge("taskwire_worker_paused", "1 while the worker's memory is past its pause threshold.",
        f.paused ? 1.0 : 0.0);
}

std::string render_metrics(const WorkerFacts& f) {
  http::PrometheusText p;
  write_tasks(p, f);
  write_transfers(p, f);
  p.single("taskwire_worker_threads", "gauge", "Threads running tasks.", f.nthreads);
  p.single("taskwire_worker_memory_bytes", "gauge",
           "Bytes of results and dependencies held, in memory or spilled to disk.",
           static_cast<double>(f.memory_bytes));
  write_memory(p, f);
  p.single("taskwire_worker_keys", "gauge", "Results and dependencies held.", static_cast<double>(f.keys));
  p.single("taskwire_worker_event_loop_lag_seconds", "gauge",
           "How late the last probe timer fired on the worker's strand.", f.loop_lag);
  p.single("taskwire_worker_event_loop_lag_max_seconds", "gauge",
           "The largest such delay since the worker started.", f.loop_lag_max);
  for (const auto& c : f.backend_counters)
    p.single("taskwire_worker_" + c.name, "counter", c.help, static_cast<double>(c.value));
  p.single("taskwire_worker_task_stream_unrecorded_total", "counter",
           "Task runs left out of the task stream (over its rate of entries a second).",
           static_cast<double>(f.stream_unrecorded));
  p.single("taskwire_worker_uptime_seconds", "gauge", "Seconds since the worker started.", f.uptime);
  return p.take();
}

nlohmann::json to_json(const WorkerFacts& f) {
  const std::size_t queued = f.ready;
  nlohmann::json self = {{"address", f.address}, {"name", f.name},          {"nthreads", f.nthreads},
                         {"memory_bytes", f.memory_bytes}, {"running", f.executing},
                         {"queued", queued},       {"keys", f.keys},
                         {"managed_bytes", f.store.memory_bytes},
                         {"live_bytes", f.store.live_bytes},
                         {"serialized_bytes", f.store.serialized_bytes},
                         {"spilled_bytes", f.store.spilled_bytes},
                         {"memory_limit", f.memory_limit}, {"rss", f.process_bytes},
                         {"paused", f.paused}};
  nlohmann::json functions = nlohmann::json::array(), transfers = nlohmann::json::object();
  std::uint64_t completed = 0, erred = 0;
  for (const auto& [name, m] : f.functions) {
    completed += m.completed, erred += m.erred;
    functions.push_back({{"name", name}, {"tasks", nlohmann::json::object()}, {"completed", m.completed},
                         {"erred", m.erred}, {"retried", 0},
                         {"mean_seconds", m.durations.count() ? m.durations.sum() / static_cast<double>(m.durations.count()) : 0.0}});
  }
  for (const auto& [scheme, t] : f.transfers) transfers[scheme] = {{"count", t.count}, {"bytes", t.bytes}};
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& e : f.errors)
    errors.push_back({{"key", e.key}, {"function", e.function}, {"worker", f.address},
                      {"message", e.message}, {"time", e.time}});
  return {{"role", "worker"},       {"uptime", f.uptime},   {"loop_lag_seconds", f.loop_lag},
          {"workers", nlohmann::json::array({self})},      {"clients", 0},         {"completed", completed},
          {"erred", erred},         {"retried", 0},         {"functions", functions},
          {"tasks", {{"executing", f.executing}, {"ready", f.ready}, {"fetch", f.fetching}, {"all", f.tasks}}},
          {"transfers", transfers}, {"last_seq", f.last_seq},
          {"task_stream_unrecorded", f.stream_unrecorded},
          {"errors", errors}};
}

}  // namespace

http::HttpResponse render(const WorkerFacts& facts, const http::RoutedRequest& request) {
  if (request.route == http::Route::metrics)
    return http::facts_response(request, render_metrics(facts), {}, {});
  return http::facts_response(request, {}, to_json(facts), facts.stream);
}

}  // namespace taskwire::worker
