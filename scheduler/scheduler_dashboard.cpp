#include <taskwire/scheduler/scheduler_dashboard.hpp>

#include <taskwire/http/daemon_answers.hpp>
#include <taskwire/http/prometheus_text.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

namespace taskwire::scheduler {

void DashboardRecorder::task_finished(std::string_view worker, int nthreads,
                                      std::string_view function,
                                      const protocol::TaskFinished& task, double now) {
  const double start = now - std::max(0.0, task.duration_s);
  if (brought_transfer(task)) {
    // Shown on the receiving worker's row, where the dependencies arrived (as Dask does).
    const double stop = std::min(start, now - task.transfer_end_ago_s);
    stream_.record_transfer(task.key, worker, stop - task.transfer_s, stop,
                            static_cast<std::int64_t>(task.transfer_bytes));
  }
  stream_.record_task({.key = task.key, .function = function, .worker = worker,
                       .nthreads = nthreads, .thread = task.thread, .start = start, .stop = now,
                       .transfer_seconds = task.transfer_s,
                       .nbytes = static_cast<std::int64_t>(task.nbytes)});
}

void DashboardRecorder::task_erred(std::string_view worker, int nthreads, std::string_view key,
                                   std::string_view function, std::string_view message,
                                   double now) {
  stream_.record_task({.key = key, .function = function, .worker = worker, .nthreads = nthreads,
                       .start = now, .stop = now, .erred = true});
  if (max_errors_ == 0) return;
  if (errors_.size() == max_errors_) errors_.pop_front();
  errors_.push_back({std::string(key), std::string(function), std::string(worker),
                     std::string(message), now});
}

http::RoutedRequest route_scheduler_request(const http::HttpRequest& request) {
  return http::route_of(request,
                        {"dashboard", "workers", "tasks", "functions", "task-stream", "errors"});
}

SchedulerFacts collect_facts(const SchedulerState& state, const DashboardRecorder* recorder,
                             const http::RoutedRequest& request) {
  SchedulerFacts f;
  f.tasks = state.task_counts();
  f.functions = state.function_metrics();
  f.workers = state.workers();
  f.clients = state.client_count();
  if (recorder) {
    f.last_seq = recorder->stream().last_seq();
    f.stream_unrecorded = recorder->unrecorded();
    if (request.route == http::Route::json) {
      if (request.part == "dashboard" || request.part == "task-stream")
        f.stream = recorder->stream().since(request.since);
      if (request.part == "dashboard" || request.part == "errors")
        f.errors.assign(recorder->errors().begin(), recorder->errors().end());
    }
  }
  return f;
}

namespace {

constexpr TaskStatus kReportedStates[] = {TaskStatus::released,   TaskStatus::waiting,
                                          TaskStatus::no_worker,  TaskStatus::queued,
                                          TaskStatus::processing, TaskStatus::assigned,
                                          TaskStatus::memory,
                                          TaskStatus::erred};

void write_counts(http::PrometheusText& p, const SchedulerFacts& f) {
  p.family("taskwire_scheduler_tasks", "gauge", "Tasks the scheduler holds, by state.");
  for (TaskStatus s : kReportedStates)
    p.sample("taskwire_scheduler_tasks", static_cast<double>(f.tasks.count(s)),
             {{"state", to_string(s)}});
  p.single("taskwire_scheduler_tasks_completed_total", "counter",
           "Tasks that finished on a worker (processing -> memory).",
           static_cast<double>(f.tasks.completed));
  p.single("taskwire_scheduler_tasks_erred_total", "counter",
           "Tasks that went to erred (their own failure or a dependency's).",
           static_cast<double>(f.tasks.erred));
  p.single("taskwire_scheduler_tasks_retried_total", "counter",
           "Task failures answered by running the task again (retries).",
           static_cast<double>(f.tasks.retried));
  p.single("taskwire_scheduler_keys_lost_total", "counter",
           "Results whose every copy was lost with a worker: computed again if still needed.",
           static_cast<double>(f.tasks.lost));
  p.single("taskwire_scheduler_workers_retired_total", "counter",
           "Workers closed after a retirement (their --lifetime, or retire_workers), their "
           "data moved first.",
           static_cast<double>(f.tasks.workers_retired));
  p.family("taskwire_scheduler_function_tasks_completed_total", "counter",
           "Tasks that finished, by function.");
  for (const auto& [name, m] : f.functions)
    p.sample("taskwire_scheduler_function_tasks_completed_total",
             static_cast<double>(m.tasks.completed), {{"function", name}});
  p.family("taskwire_scheduler_task_duration_seconds", "histogram",
           "How long tasks ran on their worker, as the workers reported, by function.");
  for (const auto& [name, m] : f.functions)
    p.histogram("taskwire_scheduler_task_duration_seconds", m.durations, {{"function", name}});
}

void write_workers(http::PrometheusText& p, const SchedulerFacts& f) {
  int threads = 0;
  for (const auto& w : f.workers) threads += w.nthreads;
  p.single("taskwire_scheduler_workers", "gauge", "Workers connected.",
           static_cast<double>(f.workers.size()));
  const auto retiring = std::count_if(f.workers.begin(), f.workers.end(),
                                      [](const WorkerInfo& w) { return w.retiring; });
  p.single("taskwire_scheduler_workers_retiring", "gauge",
           "Workers connected and retiring: they take no new task and leave once their data "
           "is elsewhere.",
           static_cast<double>(retiring));
  p.single("taskwire_scheduler_clients", "gauge", "Clients connected.",
           static_cast<double>(f.clients));
  p.single("taskwire_scheduler_threads", "gauge", "Task threads of all workers together.", threads);
  p.family("taskwire_scheduler_worker_memory_bytes", "gauge",
           "Bytes of results a worker holds, as the scheduler knows them.");
  for (const auto& w : f.workers)
    p.sample("taskwire_scheduler_worker_memory_bytes", static_cast<double>(w.nbytes),
             {{"worker", w.address}});
  p.family("taskwire_scheduler_worker_processing_tasks", "gauge",
           "Tasks sent to a worker and not answered yet (running or queued there).");
  for (const auto& w : f.workers)
    p.sample("taskwire_scheduler_worker_processing_tasks", static_cast<double>(w.processing),
             {{"worker", w.address}});
  p.family("taskwire_scheduler_worker_threads", "gauge", "Task threads of a worker.");
  for (const auto& w : f.workers)
    p.sample("taskwire_scheduler_worker_threads", w.nthreads, {{"worker", w.address}});
}

std::string render_metrics(const SchedulerFacts& f) {
  http::PrometheusText p;
  write_counts(p, f);
  write_workers(p, f);
  p.single("taskwire_scheduler_event_loop_lag_seconds", "gauge",
           "How late the last probe timer fired on the scheduler's strand.", f.loop_lag);
  p.single("taskwire_scheduler_event_loop_lag_max_seconds", "gauge",
           "The largest such delay since the scheduler started.", f.loop_lag_max);
  p.single("taskwire_scheduler_task_stream_unrecorded_total", "counter",
           "Finished tasks left out of the task stream (over its rate of entries a second).",
           static_cast<double>(f.stream_unrecorded));
  for (const auto& c : f.backend_counters)
    p.single("taskwire_scheduler_" + c.name, "counter", c.help, static_cast<double>(c.value));
  p.single("taskwire_scheduler_uptime_seconds", "gauge", "Seconds since the scheduler started.",
           f.uptime);
  return p.take();
}

nlohmann::json state_counts(const TaskCounts& c) {
  nlohmann::json j = nlohmann::json::object();
  for (TaskStatus s : kReportedStates) j[std::string(to_string(s))] = c.count(s);
  return j;
}

nlohmann::json to_json(const SchedulerFacts& f) {
  nlohmann::json workers = nlohmann::json::array(), functions = nlohmann::json::array();
  for (const auto& w : f.workers) {
    const std::size_t running = std::min<std::size_t>(w.processing, static_cast<std::size_t>(w.nthreads));
    workers.push_back({{"address", w.address}, {"name", w.name}, {"nthreads", w.nthreads},
                       {"memory_bytes", w.nbytes}, {"running", running},
                       {"queued", w.processing - running}, {"keys", w.has_what},
                       {"occupancy_seconds", w.occupancy},
                       {"status", w.retiring ? "retiring" : w.paused ? "paused" : "running"}});
  }
  for (const auto& [name, m] : f.functions)
    functions.push_back({{"name", name}, {"tasks", state_counts(m.tasks)},
                         {"completed", m.tasks.completed}, {"erred", m.tasks.erred},
                         {"retried", m.tasks.retried},
                         {"mean_seconds", m.durations.count() ? m.durations.sum() / static_cast<double>(m.durations.count()) : 0.0}});
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& e : f.errors)
    errors.push_back({{"key", e.key}, {"function", e.function}, {"worker", e.worker},
                      {"message", e.message}, {"time", e.time}});
  return {{"role", "scheduler"},          {"uptime", f.uptime},
          {"loop_lag_seconds", f.loop_lag}, {"workers", workers},
          {"clients", f.clients},         {"tasks", state_counts(f.tasks)},
          {"completed", f.tasks.completed}, {"erred", f.tasks.erred},
          {"retried", f.tasks.retried},   {"functions", functions},
          {"last_seq", f.last_seq},
          {"task_stream_unrecorded", f.stream_unrecorded}, {"errors", errors}};
}

}  // namespace

http::HttpResponse render(const SchedulerFacts& facts, const http::RoutedRequest& request) {
  if (request.route == http::Route::metrics)
    return http::facts_response(request, render_metrics(facts), {}, {});
  return http::facts_response(request, {}, to_json(facts), facts.stream);
}

}  // namespace taskwire::scheduler
