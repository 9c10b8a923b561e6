// Restrictions on where a task runs, after Dask's resource and worker restrictions
// (Scheduler.valid_workers): SubmitOptions::resources, workers and allow_other_workers, and
// the paused workers nothing new goes to. Unlike Dask, the scheduler counts what its tasks
// consume on each worker and places a restricted task only where enough is free: a GPU task
// waits in no-worker for a GPU rather than in the queue of a worker whose GPU is taken, so
// it goes to whichever GPU frees first. The worker keeps its own account (worker_state.cpp):
// a task released while running still holds its share there until it ends.
#include <taskwire/scheduler/scheduler_state.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace taskwire::scheduler {

namespace {

bool named(const std::vector<std::string>& workers, const WorkerState* ws) {
  return std::any_of(workers.begin(), workers.end(), [ws](const std::string& w) {
    return w == ws->address || w == ws->name;
  });
}

}  // namespace

void SchedulerState::set_restrictions(TaskState* ts, const TaskSpec& spec) {
  if (spec.resources.empty() && spec.workers.empty()) return;
  auto r = std::make_unique<TaskRestrictions>();
  for (const auto& [name, amount] : spec.resources)
    if (amount > 0) r->resources.emplace(name, amount);  // nothing needed: no restriction
  r->workers = spec.workers;
  r->loose = spec.allow_other_workers;
  if (!r->resources.empty() || !r->workers.empty()) ts->restrictions = std::move(r);
}

bool SchedulerState::eligible(const TaskState* ts, const WorkerState* ws,
                              bool honour_workers) const {
  if (ws->paused || ws->retiring) return false;
  const TaskRestrictions* r = ts->restrictions.get();
  if (!r) return true;
  if (honour_workers && !r->workers.empty() && !named(r->workers, ws)) return false;
  return r->resources.empty() || runtime::resources_fit(r->resources, ws->resources,
                                                        ws->used_resources);
}

bool SchedulerState::placeable(const TaskState* ts) const {
  auto any = [&](bool honour) {
    return std::any_of(workers_.begin(), workers_.end(),
                       [&](const auto& w) { return eligible(ts, w.second.get(), honour); });
  };
  if (any(true)) return true;
  return ts->restrictions && ts->restrictions->loose && any(false);
}

bool SchedulerState::runnable_somewhere(const TaskState* ts) const {
  const TaskRestrictions* r = ts->restrictions.get();
  return std::any_of(workers_.begin(), workers_.end(), [&](const auto& w) {
    const WorkerState* ws = w.second.get();
    if (!r) return true;
    if (!r->loose && !r->workers.empty() && !named(r->workers, ws)) return false;
    return runtime::resources_fit(r->resources, ws->resources);
  });
}

std::string SchedulerState::needs_of(const TaskState* ts) const {
  const TaskRestrictions* r = ts->restrictions.get();
  if (!r) return "a worker (none is connected)";
  std::string needs;
  if (!r->resources.empty()) needs = "resources " + runtime::format_resources(r->resources);
  if (!r->workers.empty() && !r->loose)
    needs += fmt::format("{}one of the workers {}", needs.empty() ? "" : " on ",
                         fmt::join(r->workers, ", "));
  return needs;
}

void SchedulerState::warn_unrunnable(TaskState* ts) {
  if (!ts->restrictions || runnable_somewhere(ts)) return;
  const auto [needs, first] = warned_needs_.insert(needs_of(ts));
  if (!first) return;
  log(LogLevel::warning,
      fmt::format("task '{}' waits for a worker: it needs {}, which no connected worker "
                  "offers; it runs once such a worker joins (other tasks that need the same "
                  "are not logged; scheduler_info().unrunnable lists them)",
                  ts->key, *needs));
}

std::vector<UnrunnableInfo> SchedulerState::unrunnable(std::size_t limit) const {
  std::vector<UnrunnableInfo> out;
  for (const TaskState* ts : unrunnable_) {
    if (out.size() >= limit) break;
    if (!runnable_somewhere(ts)) out.push_back({ts->key, needs_of(ts)});
  }
  return out;
}

void SchedulerState::acquire_resources(TaskState* ts, WorkerState* ws) {
  if (ts->restrictions && !ts->restrictions->resources.empty())
    runtime::account_resources(ws->used_resources, ts->restrictions->resources, 1);
}

void SchedulerState::release_resources(TaskState* ts, WorkerState* ws) {
  if (!ts->restrictions || ts->restrictions->resources.empty()) return;
  runtime::account_resources(ws->used_resources, ts->restrictions->resources, -1);
  if (!unrunnable_.empty()) retry_unrunnable_ = true;
}

void SchedulerState::on(const WorkerStatusChanged& e) {
  WorkerState* ws = find_worker(e.worker);
  if (!ws || ws->paused == e.paused) return;
  ws->paused = e.paused;
  log(LogLevel::info, fmt::format("worker {} {}", ws->address,
                                  e.paused ? "paused: no new task goes there" : "resumed"));
  classify_for_stealing(ws);
  if (!e.paused && !unrunnable_.empty()) retry_unrunnable_ = true;
  if (!e.paused) retirement_touched_all();  // it may take a retiring worker's copies now
}

std::string SchedulerState::validate_resources(const WorkerState* ws) const {
  runtime::Resources used;
  for (const TaskState* ts : ws->processing)
    if (ts->restrictions) runtime::account_resources(used, ts->restrictions->resources, 1);
  if (!runtime::resources_fit(used, ws->used_resources) ||
      !runtime::resources_fit(ws->used_resources, used))
    return fmt::format("worker {} counts resources {} in use, its tasks hold {}", ws->address,
                       runtime::format_resources(ws->used_resources),
                       runtime::format_resources(used));
  return {};
}

}  // namespace taskwire::scheduler
