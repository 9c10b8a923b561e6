// Choosing workers: Dask's decide_worker / worker_objective for tasks with dependencies,
// and scheduler-side queuing of root tasks by worker saturation.
#include <taskwire/scheduler/scheduler_state.hpp>

#include <taskwire/runtime/function_registry.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace taskwire::scheduler {

bool SchedulerState::queuing_enabled() const { return std::isfinite(options_.worker_saturation); }

int SchedulerState::free_threads(const WorkerState* ws) const {
  return std::max(0, ws->nthreads - ws->busy_threads);
}

double SchedulerState::load_per_thread(const WorkerState* ws, double work) const {
  const int threads = ws->paused || ws->retiring ? 0 : free_threads(ws);
  // A worker whose every thread is held by a task nobody waits for (cancelled, hung) comes
  // last: new work there would wait behind it.
  return threads > 0 ? work / threads : 1e12 + work;
}

int SchedulerState::task_slots(const WorkerState* ws, const TaskState* next) const {
  const int threads = free_threads(ws);
  if (threads == 0 || ws->paused || ws->retiring) return 0;
  int capacity = std::max(1, static_cast<int>(std::ceil(options_.worker_saturation * threads)));
  if (next && options_.short_task_cover_seconds > 0) {
    // Known-short tasks: cover the refill round trip (expected_duration is the default, long,
    // until the function reported a duration).
    const double per_thread = options_.short_task_cover_seconds /
                              std::max(expected_duration(next->function), 1e-9);
    const double most = static_cast<double>(options_.max_short_task_slots);
    capacity = std::max(capacity, static_cast<int>(std::min(per_thread, most)) * threads);
  }
  return capacity - static_cast<int>(ws->processing.size());
}

namespace {
/// What a part of a result (Client::getitem) is expected to take before one has reported:
/// a copy of one element. With the default half second, the worker holding the whole looked
/// busy after one part was placed there, and the next parts went to another worker, each
/// fetching the whole for one element (Dask gives its split tasks 1 us the same way,
/// distributed.scheduler.default-task-durations).
constexpr double kItemTaskSeconds = 1e-5;
}  // namespace

// Before a function reported a duration: the default, or kItemTaskSeconds for a part.
double SchedulerState::unmeasured_duration(std::string_view function) const {
  return runtime::detail::is_item_function(function) ? kItemTaskSeconds
                                                     : options_.default_task_duration;
}

double SchedulerState::expected_duration(FunctionName function) const {
  auto it = durations_.find(function.id());
  return it != durations_.end() ? it->second : unmeasured_duration(function);
}

double SchedulerState::expected_duration(std::string_view function) const {
  auto it = function_names_.find(std::string(function));
  return it != function_names_.end() ? expected_duration(FunctionName(&*it))
                                     : unmeasured_duration(function);
}

double SchedulerState::occupancy(const WorkerState* ws) const {
  double seconds = 0;
  for (const auto& [function, count] : ws->processing_by_function) {
    seconds += count * expected_duration(FunctionName(function));
  }
  return seconds + static_cast<double>(ws->fetch_bytes) / options_.bandwidth;
}

std::int64_t SchedulerState::size_of(const TaskState* ts) const {
  return ts->nbytes >= 0 ? ts->nbytes : options_.default_nbytes;
}

WorkerState* SchedulerState::decide_root_worker(const TaskState* ts) const {
  // The least busy worker with a free slot; it ignores data location, as roots have none.
  WorkerState* best = nullptr;
  double best_load = 0;
  for (const auto& [address, ws] : workers_) {
    if (task_slots(ws.get(), ts) <= 0) continue;
    const double load = load_per_thread(ws.get(), static_cast<double>(ws->processing.size()));
    if (!best || load < best_load) {
      best = ws.get();
      best_load = load;
    }
  }
  return best;
}

// A worker that could not fetch an input of `ts` from a live holder (a one-way partition)
// gets it again only when no other worker may take it: placed there again, it would fail the
// same way until the task errs (allowed_fetch_failures).
WorkerState* SchedulerState::decide_worker(const TaskState* ts) {
  if (const auto* avoid = failed_to_fetch_for(ts)) {
    if (WorkerState* ws = decide_worker_avoiding(ts, avoid)) return ws;
  }
  return decide_worker_avoiding(ts, nullptr);
}

WorkerState* SchedulerState::decide_worker_avoiding(const TaskState* ts,
                                                    const std::vector<std::string>* avoid) {
  if (WorkerState* ws = decide_worker_among(ts, true, avoid)) return ws;
  // allow_other_workers: none of the named workers can take it now, any other may.
  const TaskRestrictions* r = ts->restrictions.get();
  return r && r->loose && !r->workers.empty() ? decide_worker_among(ts, false, avoid) : nullptr;
}

const std::vector<std::string>* SchedulerState::failed_to_fetch_for(const TaskState* ts) const {
  if (fetch_failures_.empty()) return nullptr;
  auto it = fetch_failures_.find(ts->key);
  return it != fetch_failures_.end() && !it->second.consumers.empty() ? &it->second.consumers
                                                                       : nullptr;
}

WorkerState* SchedulerState::decide_worker_among(const TaskState* ts, bool honour_workers,
                                                 const std::vector<std::string>* avoid) {
  auto excluded = [&](const WorkerState* ws) {
    return !eligible(ts, ws, honour_workers) ||
           (avoid && std::find(avoid->begin(), avoid->end(), ws->address) != avoid->end());
  };
  WorkerState* idlest = nullptr;
  double idlest_load = 0;
  for (const auto& [address, ws] : workers_) {
    if (excluded(ws.get())) continue;
    const double load = load_per_thread(ws.get(), occupancy(ws.get()));
    if (!idlest || load < idlest_load) {
      idlest = ws.get();
      idlest_load = load;
    }
  }
  if (!idlest || ts->dependencies.empty()) return idlest;

  // Candidates: the workers holding some dependency (Dask), plus the idlest worker, so that a
  // pile of dependents of one key spreads out once its holder is busy (Dask relies on work
  // stealing for that; stealing here moves them only later, a round trip each).
  const std::uint64_t epoch = ++placement_epoch_;
  std::vector<WorkerState*> candidates;
  std::int64_t total_bytes = 0;
  for (const TaskState* dep : ts->dependencies) {
    const std::int64_t bytes = size_of(dep);
    total_bytes += bytes;
    for (WorkerState* ws : dep->who_has) {
      if (ws->placement_epoch != epoch && excluded(ws)) continue;
      if (ws->placement_epoch != epoch) {
        ws->placement_epoch = epoch;
        ws->held_dependency_bytes = 0;
        candidates.push_back(ws);
      }
      ws->held_dependency_bytes += bytes;
    }
  }
  if (idlest->placement_epoch != epoch) {
    idlest->placement_epoch = epoch;
    idlest->held_dependency_bytes = 0;
    candidates.push_back(idlest);
  }

  // worker_objective: expected start time (queue wait + fetching what it lacks), then the
  // worker holding less data, then the address for determinism.
  auto objective = [&](const WorkerState* ws) {
    const double fetch = static_cast<double>(total_bytes - ws->held_dependency_bytes);
    const double start = load_per_thread(ws, occupancy(ws)) + fetch / options_.bandwidth;
    return std::make_tuple(start, ws->nbytes, std::string_view(ws->address));
  };
  WorkerState* best = candidates.front();
  auto best_score = objective(best);
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    auto score = objective(candidates[i]);
    if (score < best_score) {
      best = candidates[i];
      best_score = score;
    }
  }
  return best;
}

void SchedulerState::add_to_processing(TaskState* ts, WorkerState* ws) {
  ComputeTask msg{ws->address, ts->key, ts->function, ts->spec, {}, ts->priority, stimulus_id_};
  if (ts->restrictions) msg.resources = ts->restrictions->resources;
  ts->attempt = msg.attempt = ++attempts_;
  msg.dependencies.reserve(ts->dependencies.size());
  std::int64_t fetch = 0;
  for (const TaskState* dep : ts->dependencies) {
    DependencyLocation location{dep->key, {}, size_of(dep)};
    location.who_has.reserve(dep->who_has.size());
    bool local = false;
    for (const WorkerState* holder : dep->who_has) {
      location.who_has.push_back(holder->address);
      local = local || holder == ws;
    }
    if (dep->who_has.empty() && dep->processing_on) {  // assigned ahead of it
      local = dep->processing_on == ws;
      location.running = !local;
      if (!local) location.who_has.push_back(dep->processing_on->address);
    }
    if (!local) fetch += location.nbytes;
    msg.dependencies.push_back(std::move(location));
  }
  ts->fetch_bytes = fetch;
  ws->fetch_bytes += fetch;
  acquire_resources(ts, ws);
  ws->processing.insert(ts);
  ++ws->processing_by_function[ts->function.id()];
  ts->processing_on = ws;
  ts->state = TaskStatus::processing;
  classify_for_stealing(ws);
  emit_to_worker(ws, std::move(msg));
  if (options_.assign_ahead > 0)  // off: no walk over the dependents on every placement
    for (TaskState* d : ts->dependents) recommend_assign_ahead(d);
}

WorkerState* SchedulerState::exit_processing(TaskState* ts) {
  WorkerState* ws = ts->processing_on;
  ts->processing_on = nullptr;
  if (ts->state == TaskStatus::assigned) {  // leaving before its inputs finished
    --ws->assigned;
    ts->waiting_on.clear();
  }
  ws->processing.erase(ts);
  auto it = ws->processing_by_function.find(ts->function.id());
  if (it != ws->processing_by_function.end() && --it->second == 0) {
    ws->processing_by_function.erase(it);
  }
  ws->fetch_bytes -= ts->fetch_bytes;
  ts->fetch_bytes = 0;
  release_resources(ts, ws);
  end_steal(ts);
  ts->steal_refused = false;
  classify_for_stealing(ws);
  if (ws->retiring) retirement_touched(ws);
  return ws->removed ? nullptr : ws;
}

void SchedulerState::schedule_queued() {
  // Dask's stimulus_queue_slots_maybe_opened: fill the free slots, best priority first.
  if (queued_.empty()) return;
  long slots = 0;
  for (const auto& [address, ws] : workers_)
    slots += std::max(0, task_slots(ws.get(), *queued_.begin()));
  for (; slots > 0 && !queued_.empty(); --slots) {
    TaskState* ts = *queued_.begin();
    WorkerState* ws = decide_root_worker(ts);
    if (!ws) break;
    queued_.erase(queued_.begin());
    add_to_processing(ts, ws);
    log_transition(ts, TaskStatus::queued);
  }
}

void SchedulerState::schedule_unrunnable() {
  std::vector<TaskState*> ready(unrunnable_.begin(), unrunnable_.end());
  for (TaskState* ts : ready) transition(ts, TaskStatus::processing);
}

void SchedulerState::record_duration(FunctionName function, double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return;
  auto [it, inserted] = durations_.try_emplace(function.id(), seconds);
  if (!inserted) it->second = 0.5 * it->second + 0.5 * seconds;  // as Dask's TaskPrefix
}

}  // namespace taskwire::scheduler
