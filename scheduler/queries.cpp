// Read-only views of the state, and the invariant check used by tests (after Dask's
// validate_task_state / validate_state).
#include <taskwire/scheduler/scheduler_state.hpp>

#include <algorithm>

namespace taskwire::scheduler {

namespace {
using S = TaskStatus;

std::vector<std::string> keys_by_priority(const PtrSet<TaskState>& set) {
  const auto tasks = by_priority(set);
  std::vector<std::string> keys;
  keys.reserve(tasks.size());
  for (const TaskState* ts : tasks) keys.push_back(ts->key);
  return keys;
}

bool needs_inputs_in_memory(S s) {
  return s == S::queued || s == S::processing || s == S::no_worker;
}
}  // namespace

bool SchedulerState::contains(std::string_view key) const { return find_task(key) != nullptr; }

std::optional<TaskStatus> SchedulerState::task_state(std::string_view key) const {
  if (const TaskState* ts = find_task(key)) return ts->state;
  return std::nullopt;
}

std::vector<std::string> SchedulerState::who_has(std::string_view key) const {
  std::vector<std::string> addresses;
  if (const TaskState* ts = find_task(key)) {
    for (const WorkerState* ws : ts->who_has) addresses.push_back(ws->address);
  }
  std::sort(addresses.begin(), addresses.end());
  return addresses;
}

std::optional<std::string> SchedulerState::processing_on(std::string_view key) const {
  const TaskState* ts = find_task(key);
  if (!ts || !ts->processing_on) return std::nullopt;
  return ts->processing_on->address;
}

std::uint64_t SchedulerState::attempt(std::string_view key) const {
  const TaskState* ts = find_task(key);
  return ts ? ts->attempt : 0;
}

std::optional<std::int64_t> SchedulerState::nbytes(std::string_view key) const {
  const TaskState* ts = find_task(key);
  if (!ts || ts->nbytes < 0) return std::nullopt;
  return ts->nbytes;
}

std::optional<TaskFailure> SchedulerState::failure(std::string_view key) const {
  const TaskState* ts = find_task(key);
  if (!ts || ts->state != S::erred || !ts->failure) return std::nullopt;
  return *ts->failure;
}

std::vector<std::string> SchedulerState::processing(std::string_view worker) const {
  const WorkerState* ws = find_worker(worker);
  return ws ? keys_by_priority(ws->processing) : std::vector<std::string>{};
}

std::vector<std::string> SchedulerState::has_what(std::string_view worker) const {
  const WorkerState* ws = find_worker(worker);
  return ws ? keys_by_priority(ws->has_what) : std::vector<std::string>{};
}

std::optional<WorkerInfo> SchedulerState::worker(std::string_view address) const {
  const WorkerState* ws = find_worker(address);
  if (!ws) return std::nullopt;
  return WorkerInfo{ws->address,         ws->name,   ws->nthreads,  ws->processing.size(),
                    ws->has_what.size(), ws->nbytes, occupancy(ws), ws->last_seen,
                    ws->resources,       ws->used_resources, ws->paused, ws->retiring};
}

std::vector<WorkerInfo> SchedulerState::workers() const {
  std::vector<WorkerInfo> infos;
  for (const auto& [address, ws] : workers_) infos.push_back(*worker(address));
  return infos;
}

std::map<TaskStatus, std::size_t> SchedulerState::tasks_by_state() const {
  std::map<TaskStatus, std::size_t> counts;
  // From the counts each transition keeps (validate() checks them against the tasks): a
  // scheduler_info() costs the same with a million tasks held as with none.
  for (S s : {S::released, S::waiting, S::no_worker, S::queued, S::processing, S::assigned,
              S::memory, S::erred})
    counts[s] = counts_.count(s);
  return counts;
}

std::vector<std::string> SchedulerState::wanted_by(std::string_view client) const {
  std::vector<std::string> keys;
  if (const ClientState* cs = find_client(client)) {
    for (const TaskState* ts : cs->wants_what) keys.push_back(ts->key);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::vector<TransitionRecord> SchedulerState::story(std::string_view key) const {
  std::vector<TransitionRecord> records;
  const std::size_t n = transition_log_.size();
  for (std::size_t i = 0; i < n; ++i) {  // oldest first: from the ring's next slot round
    const TransitionRecord& r = transition_log_[(transition_log_next_ + i) % n];
    if (r.key == key) records.push_back(r);
  }
  return records;
}

std::string SchedulerState::validate() const {
  std::size_t dependency_edges = 0;
  std::size_t dependent_edges = 0;
  for (const auto& [key, owned] : tasks_) {
    TaskState* ts = owned.get();  // non-const: the sets hold TaskState*
    if (ts->key != key || key.data() != ts->key.data() || ts->state == S::forgotten)
      return fmt::format("task '{}' ({}): forgotten or misfiled", key, ts->state);
    dependency_edges += ts->dependencies.size();
    dependent_edges += ts->dependents.size();
    std::string problem = validate_edges(ts);
    if (problem.empty()) problem = validate_task(ts);
    if (!problem.empty()) return fmt::format("task '{}' ({}): {}", key, ts->state, problem);
  }
  if (dependency_edges != dependent_edges) return "dependency and dependent edges differ";
  if (std::string problem = validate_counts(); !problem.empty()) return problem;
  if (std::string problem = validate_workers(); !problem.empty()) return problem;
  if (std::string problem = validate_steals(); !problem.empty()) return problem;
  if (std::string problem = validate_retiring(); !problem.empty()) return problem;
  if (std::string problem = validate_rebalance(); !problem.empty()) return problem;
  for (const auto& [id, cs] : clients_) {
    for (const TaskState* ts : cs->wants_what) {
      if (find_task(ts->key) != ts) return fmt::format("client {} wants a dead task", id);
    }
  }
  for (const TaskState* ts : unrunnable_)
    if (placeable(ts)) return fmt::format("'{}' in no-worker while a worker can take it", ts->key);
  return {};
}

std::string SchedulerState::validate_counts() const {
  std::array<std::size_t, kTaskStatusCount> by_state{};
  std::unordered_map<const std::string*, std::array<std::size_t, kTaskStatusCount>> by_function;
  for (const auto& [key, ts] : tasks_) {
    ++by_state[static_cast<std::size_t>(ts->state)];
    ++by_function[&static_cast<const std::string&>(ts->function)][static_cast<std::size_t>(ts->state)];
  }
  for (std::size_t s = 0; s + 1 < kTaskStatusCount; ++s) {
    if (by_state[s] != counts_.by_state[s])
      return fmt::format("{} tasks are {}, counted {}", by_state[s], static_cast<TaskStatus>(s),
                         counts_.by_state[s]);
    for (const auto& [function, metrics] : function_metrics_) {
      const auto it = by_function.find(function);
      const std::size_t live = it == by_function.end() ? 0 : it->second[s];
      if (live != metrics.tasks.by_state[s])
        return fmt::format("{} tasks of {} are {}, counted {}", live, *function,
                           static_cast<TaskStatus>(s), metrics.tasks.by_state[s]);
    }
  }
  return {};
}

std::vector<std::pair<std::string, FunctionMetrics>> SchedulerState::function_metrics() const {
  std::vector<std::pair<std::string, FunctionMetrics>> out;
  out.reserve(function_metrics_.size());
  for (const auto& [function, metrics] : function_metrics_) out.emplace_back(*function, metrics);
  return out;
}

int SchedulerState::nthreads_of(std::string_view address) const {
  const WorkerState* ws = find_worker(address);
  return ws ? ws->nthreads : 1;
}

std::string_view SchedulerState::function_of(std::string_view key) const {
  const TaskState* ts = find_task(key);
  return ts ? std::string_view(ts->function) : std::string_view();
}

std::string SchedulerState::validate_edges(TaskState* ts) const {
  for (TaskState* dep : ts->dependencies) {
    if (find_task(dep->key) != dep) return fmt::format("dependency '{}' not live", dep->key);
    if (!dep->dependents.count(ts))
      return fmt::format("missing from the dependents of '{}'", dep->key);
    const bool waits_on = ts->waiting_on.count(dep) > 0;
    const bool in_waiters = dep->waiters.count(ts) > 0;
    if (ts->state == S::waiting && waits_on == !dep->who_has.empty())
      return fmt::format("waiting_on disagrees with memory of '{}'", dep->key);
    if (ts->state == S::waiting && !in_waiters && dep->state != S::released)
      return fmt::format("not among the waiters of '{}'", dep->key);
    if (needs_inputs_in_memory(ts->state) && (dep->who_has.empty() || !in_waiters))
      return fmt::format("dependency '{}' not in memory or not waited on", dep->key);
    if (ts->state == S::assigned) {  // each input in memory, or running ahead of it there
      if (!in_waiters || waits_on == !dep->who_has.empty())
        return fmt::format("dependency '{}' not in memory nor waited on", dep->key);
      if (waits_on && ((dep->state != S::processing && dep->state != S::assigned) ||
                       (dep->processing_on != ts->processing_on &&
                        !options_.assign_ahead_across_workers)))
        return fmt::format("assigned ahead on {} but its dependency '{}' is {} elsewhere",
                           ts->processing_on->address, dep->key, dep->state);
    }
  }
  for (const TaskState* w : ts->waiting_on) {
    if (!w->dependents.count(ts)) return "waiting on a non-dependency";
  }
  for (TaskState* w : ts->waiters) {
    if (!ts->dependents.count(w)) return "waiter is not a dependent";
    if (w->state != S::waiting && w->state != S::assigned && !needs_inputs_in_memory(w->state))
      return fmt::format("waiter '{}' is {}", w->key, w->state);
  }
  return {};
}

std::string SchedulerState::validate_task(TaskState* ts) const {
  if (ts->recommended) return "recommendation left pending";
  if ((ts->state == S::waiting || ts->state == S::assigned) == ts->waiting_on.empty())
    return "waiting_on mismatch";
  if ((ts->state == S::memory) == ts->who_has.empty()) return "who_has mismatch";
  if ((ts->state == S::processing || ts->state == S::assigned) != (ts->processing_on != nullptr))
    return "processing_on mismatch";
  if (ts->processing_on && (ts->attempt == 0 || ts->attempt > attempts_))
    return "processing without an attempt of its own";
  if ((ts->state == S::queued) != (queued_.count(ts) > 0)) return "queue membership mismatch";
  if ((ts->state == S::no_worker) != (unrunnable_.count(ts) > 0))
    return "no-worker membership mismatch";
  if (ts->state == S::memory && ts->waiters.empty() && ts->who_wants.empty())
    return "in memory but nobody needs it";
  if (ts->state == S::released && !ts->waiters.empty()) return "released with waiters";
  if (ts->state == S::erred && !ts->failure) return "erred without a failure";
  for (const WorkerState* ws : ts->who_has) {
    if (find_worker(ws->address) != ws || !ws->has_what.count(ts))
      return fmt::format("replica on {} not recorded there", ws->address);
  }
  if (const WorkerState* ws = ts->processing_on;
      ws && ((find_worker(ws->address) != ws && !is_dying(ws)) || !ws->processing.count(ts))) {
    return "processing on a worker that does not know it";
  }
  for (const ClientState* cs : ts->who_wants) {
    if (find_client(cs->id) != cs || !cs->wants_what.count(ts))
      return fmt::format("wanted by client {} which does not want it", cs->id);
  }
  return {};
}

std::string SchedulerState::validate_workers() const {
  long free_slots = 0;
  for (const auto& [address, ws] : workers_) {
    std::int64_t bytes = 0;
    for (const TaskState* ts : ws->has_what) {
      if (std::find(ts->who_has.begin(), ts->who_has.end(), ws.get()) == ts->who_has.end())
        return fmt::format("worker {} lists '{}' which is not on it", address, ts->key);
      bytes += size_of(ts);
    }
    if (bytes != ws->nbytes)
      return fmt::format("worker {} nbytes {} != {}", address, ws->nbytes, bytes);
    std::int64_t fetch = 0;
    for (const TaskState* ts : ws->processing) {
      if (ts->processing_on != ws.get())
        return fmt::format("worker {} lists '{}' as processing", address, ts->key);
      fetch += ts->fetch_bytes;
    }
    const auto assigned = std::count_if(ws->processing.begin(), ws->processing.end(),
                                        [](const TaskState* ts) { return ts->state == S::assigned; });
    if (static_cast<std::size_t>(assigned) != ws->assigned)
      return fmt::format("worker {} counts {} tasks assigned ahead, has {}", address,
                         ws->assigned, assigned);
    int counted = 0;
    for (const auto& [function, n] : ws->processing_by_function) counted += n;
    if (counted != static_cast<int>(ws->processing.size()) || fetch != ws->fetch_bytes)
      return fmt::format("worker {} occupancy bookkeeping is off", address);
    if (std::string problem = validate_resources(ws.get()); !problem.empty()) return problem;
    if (queuing_enabled())
      free_slots += std::max(0, task_slots(ws.get(), queued_.empty() ? nullptr : *queued_.begin()));
  }
  if (!queued_.empty() && free_slots > 0) return "tasks queued while workers have free slots";
  return {};
}

bool SchedulerState::is_dying(const WorkerState* ws) const {
  return std::any_of(dying_.begin(), dying_.end(),
                     [ws](const DyingWorker& d) { return d.ws.get() == ws; });
}

}  // namespace taskwire::scheduler
