// Task state transitions, after Dask distributed's SchedulerState._transition_* methods.
// A transition may recommend further transitions; run_transitions() applies them until none
// is left. Recommendations behave like Dask's dict: one pending target per task (a later
// recommendation replaces it), applied last-recommended-first.
#include <taskwire/scheduler/scheduler_state.hpp>

#include <algorithm>

namespace taskwire::scheduler {

namespace {
using S = TaskStatus;

template <class T>
bool erase_value(std::vector<T*>& v, const T* p) {
  auto it = std::find(v.begin(), v.end(), p);
  if (it == v.end()) return false;
  v.erase(it);
  return true;
}

/// Recommends so that the best priority is applied first (the stack pops the last one).
void sort_for_recommending(std::vector<TaskState*>& v) {
  std::sort(v.begin(), v.end(),
            [](const TaskState* a, const TaskState* b) { return ByPriority{}(b, a); });
}
}  // namespace

void SchedulerState::recommend(TaskState* ts, TaskStatus finish) {
  if (!ts->recommended) recommendations_.push_back(ts);
  ts->recommended = finish;
}

void SchedulerState::run_transitions() {
  for (;;) {
    while (!recommendations_.empty()) {
      TaskState* ts = recommendations_.back();
      recommendations_.pop_back();
      if (!ts->recommended) continue;  // consumed by transition() on the way through released
      const TaskStatus finish = *ts->recommended;
      ts->recommended.reset();
      transition(ts, finish);
    }
    if (ahead_again_.empty()) return;
    // Tasks sent back to wait go ahead again once all that went back with them has: one at a
    // time, a task below two of them (a stencil's) was sent ahead under the one and taken
    // back under the other, and so on down the window, exponentially often.
    std::vector<TaskState*> again = std::exchange(ahead_again_, {});
    sort_for_recommending(again);
    for (TaskState* ts : again)
      if (ts->state == S::waiting) recommend_assign_ahead(ts);
  }
}

void SchedulerState::transition(TaskState* ts, TaskStatus finish) {
  const TaskStatus start = ts->state;
  if (start == finish || start == S::forgotten) return;
  if (!transition_step(ts, finish)) {
    if (start == S::released || finish == S::released) {
      log(LogLevel::error,
          fmt::format("impossible transition {} -> {} for '{}'", start, finish, ts->key));
      return;
    }
    // No direct path: go through released; what the release recommends for this very task
    // wins over the requested finish (as in Dask).
    transition_step(ts, S::released);
    TaskStatus next = finish;
    if (ts->recommended) {
      next = *ts->recommended;
      ts->recommended.reset();
    }
    if (ts->state == S::released && next != S::released && !transition_step(ts, next)) {
      log(LogLevel::error,
          fmt::format("impossible transition released -> {} for '{}'", next, ts->key));
    }
  }
  log_transition(ts, start);
}

// queued (a root task waiting for a slot) and no_worker (no worker may run it) leave the same
// way: to a worker once one is decided (else they stay), or released or erred.
bool SchedulerState::leave_backlog(TaskState* ts, TaskStatus finish) {
  const bool queued = ts->state == S::queued;
  auto& backlog = queued ? queued_ : unrunnable_;
  if (finish == S::processing) {
    if (WorkerState* ws = queued ? decide_root_worker(ts) : decide_worker(ts)) {
      backlog.erase(ts);
      add_to_processing(ts, ws);
    }
    return true;
  }
  if (finish != S::released && finish != S::erred) return false;
  backlog.erase(ts);
  finish == S::released ? propagate_released(ts) : propagate_erred(ts);
  return true;
}

bool SchedulerState::transition_step(TaskState* ts, TaskStatus finish) {
  switch (ts->state) {
    case S::released:
      if (finish == S::waiting) return released_to_waiting(ts), true;
      if (finish == S::forgotten) return to_forgotten(ts), true;
      if (finish == S::erred) return released_to_erred(ts), true;
      return false;
    case S::waiting:
      if (finish == S::released) return waiting_to_released(ts), true;
      if (finish == S::processing) return dispatch_ready(ts), true;
      if (finish == S::assigned) return assign_ahead(ts), true;
      return false;
    case S::queued:
    case S::no_worker:
      return leave_backlog(ts, finish);
    case S::assigned:
      if (finish == S::processing) return assigned_to_processing(ts), true;
      if (finish == S::waiting) return assigned_to_waiting(ts), true;
      [[fallthrough]];
    case S::processing:
      if (finish == S::released) return processing_to_released(ts), true;
      if (finish == S::erred) {  // blamed on a dependency; the worker may still be running it
        if (WorkerState* ws = exit_processing(ts)) free_keys(ws, ts->key);
        propagate_erred(ts);
        return true;
      }
      return false;
    case S::memory:
      if (finish == S::released) return memory_to_released(ts), true;
      if (finish == S::forgotten) return to_forgotten(ts), true;
      return false;
    case S::erred:
      if (finish == S::released) return erred_to_released(ts), true;
      return false;
    case S::forgotten:
      return true;
  }
  return false;
}

void SchedulerState::released_to_waiting(TaskState* ts) {
  if (ts->has_lost_dependencies) {
    recommend(ts, S::forgotten);
    return;
  }
  if (!ts->spec_held) {
    // Only an erred task drops its arguments, and keeps its failure when released (see
    // erred_to_released): needed again (a lost result's recomputation reaches it), it errs
    // again with the failure it had.
    if (!ts->failure) {
      log(LogLevel::error, fmt::format("'{}' would run again, but its arguments were freed", ts->key));
      ts->failure = std::make_shared<const TaskFailure>(
          TaskFailure{ts->key, "its arguments were freed when it erred; submit it again"});
    }
    recommend(ts, S::erred);
    return;
  }
  for (TaskState* dep : ts->dependencies) {
    if (dep->state == S::erred) {  // a failed input fails this task too
      ts->failure = dep->failure;
      recommend(ts, S::erred);
      return;
    }
  }
  ts->state = S::waiting;
  for (TaskState* dep : ts->dependencies) {
    if (dep->who_has.empty()) ts->waiting_on.insert(dep);
    if (dep->state == S::released) {
      recommend(dep, S::waiting);  // its own released->waiting adds us to its waiters
    } else {
      dep->waiters.insert(ts);
    }
  }
  ts->waiters.clear();
  for (TaskState* d : ts->dependents) {
    if (d->state == S::waiting) ts->waiters.insert(d);
  }
  if (ts->waiting_on.empty()) {
    recommend(ts, S::processing);
  } else {
    recommend_assign_ahead(ts);
  }
}

void SchedulerState::waiting_to_released(TaskState* ts) {
  for (TaskState* dep : ts->dependencies) {
    if (dep->waiters.erase(ts) && dep->waiters.empty() && dep->who_wants.empty()) {
      recommend(dep, S::released);
    }
  }
  ts->waiting_on.clear();
  ts->state = S::released;
  if (ts->has_lost_dependencies) {
    recommend(ts, S::forgotten);
  } else if (!ts->failure && (!ts->who_wants.empty() || !ts->waiters.empty())) {
    recommend(ts, S::waiting);
  } else {
    ts->waiters.clear();
  }
}

void SchedulerState::dispatch_ready(TaskState* ts) {
  if (!ts->waiting_on.empty()) {
    log(LogLevel::error, fmt::format("'{}' dispatched while waiting on {} dependencies", ts->key,
                                     ts->waiting_on.size()));
    return;
  }
  // Restricted tasks skip the root queue (as Dask's): its head would block the rest while
  // waiting for the one worker it may use.
  if (is_root(ts) && queuing_enabled() && !ts->restrictions) {
    if (WorkerState* ws = decide_root_worker(ts)) {
      add_to_processing(ts, ws);
    } else {
      ts->state = S::queued;
      queued_.insert(ts);
    }
    return;
  }
  if (WorkerState* ws = decide_worker(ts)) {
    add_to_processing(ts, ws);
  } else {
    ts->state = S::no_worker;
    unrunnable_.insert(ts);
    warn_unrunnable(ts);
  }
}

void SchedulerState::processing_to_released(TaskState* ts) {
  unassign_dependents(ts);
  if (WorkerState* ws = exit_processing(ts)) {
    free_keys(ws, ts->key, release_may_leave_running_);
    // It may be running there and go on running: assume so until the worker answers
    // (ThreadsBusy).
    if (release_may_leave_running_) {
      ws->busy_threads = std::min(ws->nthreads, ws->busy_threads + 1);
      classify_for_stealing(ws);
    }
  }
  propagate_released(ts);
}

void SchedulerState::propagate_released(TaskState* ts) {
  ts->state = S::released;
  bool waits_again = false;
  if (ts->has_lost_dependencies) {
    recommend(ts, S::forgotten);
  } else if (!ts->waiters.empty() || !ts->who_wants.empty()) {
    recommend(ts, S::waiting);
    waits_again = true;
  }
  if (!waits_again) {
    for (TaskState* dep : ts->dependencies) {
      if (dep->state == S::released) continue;
      dep->waiters.erase(ts);
      if (dep->waiters.empty() && dep->who_wants.empty()) recommend(dep, S::released);
    }
    ts->waiters.clear();
  }
}

// ---- assign ahead ----
// A waiting task whose unfinished dependencies all run (or are assigned) on one worker is
// sent there before they finish: the worker starts it as soon as they do, with no message
// from the scheduler (what keeps Charm++, PaRSEC and Realm under 100 us a dependent edge,
// where a central scheduler needs a round trip). Bounded by a window per worker
// (SchedulerOptions::assign_ahead per thread); never onto a paused worker, one the task may
// not use, or a dependency a steal may move. Assigned tasks are not stolen.

namespace {
/// Below this expected duration a task goes ahead to the worker running its inputs even while
/// another worker idles: TaskBench's stencil (2 workers) runs 5x faster so at 12 us tasks and
/// breaks even at ~150 us (docs/assign-ahead.md).
constexpr double kAheadPastIdleBelowSeconds = 100e-6;
/// Tasks visited when a slot of the window comes free (bounds the walk on wide graphs).
constexpr std::size_t kRefillScan = 64;
}  // namespace

WorkerState* SchedulerState::assign_ahead_target(const TaskState* ts) const {
  if (options_.assign_ahead <= 0 || ts->state != S::waiting || ts->waiting_on.empty())
    return nullptr;
  WorkerState* ws = nullptr;
  bool one_worker = true;
  for (const TaskState* dep : ts->waiting_on) {
    if ((dep->state != S::processing && dep->state != S::assigned) || dep->steal_pending)
      return nullptr;
    if (ws && dep->processing_on != ws) one_worker = false;
    ws = ws ? ws : dep->processing_on;
  }
  const bool strict = !(ts->restrictions && ts->restrictions->loose);
  if (!one_worker) {
    if (!options_.assign_ahead_across_workers || ts->ahead_across_missed) return nullptr;
    ws = ahead_across_target(ts, strict);
  }
  if (!ws || !ahead_target_fits(ts, ws, strict)) return nullptr;
  // A task sent ahead cannot be stolen: sending a stencil step's tasks ahead to the busy
  // worker that holds their inputs while another worker idles piles every later step onto
  // that one worker for good. That pays only for tasks shorter than what moving one to the
  // idle worker costs (a placement round trip and a fetch); longer ones go ahead only while
  // no other worker that could run them is idle (docs/assign-ahead.md).
  if (expected_duration(ts->function) < kAheadPastIdleBelowSeconds) return ws;
  for (const WorkerState* idle : idle_)
    if (idle != ws && eligible(ts, idle, strict)) return nullptr;
  return ws;
}

// The worker an input runs on, the least loaded of them (a stencil's two points of a step
// then go to the two workers, one each, rather than both to the first).
WorkerState* SchedulerState::ahead_across_target(const TaskState* ts, bool strict) const {
  WorkerState* best = nullptr;
  double best_load = 0;
  for (const TaskState* dep : ts->waiting_on) {
    WorkerState* ws = dep->processing_on;
    if (ws == best || !ahead_target_fits(ts, ws, strict)) continue;
    const double load = load_per_thread(ws, static_cast<double>(ws->processing.size()));
    if (!best || load < best_load || (load == best_load && ws->address < best->address)) {
      best = ws;
      best_load = load;
    }
  }
  return best;
}

bool SchedulerState::ahead_target_fits(const TaskState* ts, const WorkerState* ws,
                                       bool strict) const {
  if (!has_ahead_room(ws, ts)) return false;
  if (const auto* avoid = failed_to_fetch_for(ts);
      avoid && std::find(avoid->begin(), avoid->end(), ws->address) != avoid->end())
    return false;  // it waits, and decide_worker tries the other workers first
  return eligible(ts, ws, strict);
}

// The window per thread: assign_ahead tasks, or for known-short ones as many as cover
// short_task_cover_seconds of work (at most max_short_task_slots), as for root tasks. The
// scheduler hears that a task's inputs finished a round trip after the worker could start
// it; a window of 4 tasks of 10 us ran dry in 40 us and was then refilled a task per round
// trip (docs/assign-ahead.md).
bool SchedulerState::has_ahead_room(const WorkerState* ws, const TaskState* ts) const {
  if (ws->removed) return false;
  double per_thread = options_.assign_ahead;
  if (options_.short_task_cover_seconds > 0)
    per_thread = std::max(per_thread, std::min(options_.short_task_cover_seconds /
                                                   std::max(expected_duration(ts->function), 1e-9),
                                               static_cast<double>(options_.max_short_task_slots)));
  return static_cast<double>(ws->assigned) < per_thread * ws->nthreads;
}

void SchedulerState::recommend_assign_ahead(TaskState* ts) {
  if (!ts->recommended && assign_ahead_target(ts)) recommend(ts, S::assigned);
}

void SchedulerState::assign_ahead(TaskState* ts) {
  WorkerState* ws = assign_ahead_target(ts);
  if (!ws) return;  // things changed since it was recommended: it waits as any other
  add_to_processing(ts, ws);
  ts->state = S::assigned;
  ++ws->assigned;
  classify_for_stealing(ws);
}

void SchedulerState::assigned_to_processing(TaskState* ts) {
  WorkerState* ws = ts->processing_on;
  --ws->assigned;
  ts->state = S::processing;
  classify_for_stealing(ws);
  if (ws->retiring) retirement_touched(ws);  // started there, or to be asked back
  refill_ahead(ts);
}

// A slot of the window came free: the tasks it held back wait behind the assigned
// descendants of the task that took it, a few levels down (a stencil's next steps). Without
// this walk a task was assigned ahead only once one of its inputs had finished, one level
// ahead of the work, whatever the window.
void SchedulerState::refill_ahead(TaskState* ts) {
  std::vector<TaskState*> stack(ts->dependents.begin(), ts->dependents.end());
  for (std::size_t visits = 0; !stack.empty() && visits < kRefillScan; ++visits) {
    TaskState* d = stack.back();
    stack.pop_back();
    if (d->state == S::assigned)
      stack.insert(stack.end(), d->dependents.begin(), d->dependents.end());
    else
      recommend_assign_ahead(d);
  }
}

// Back to waiting (an input left its worker, or could not be fetched), not through released:
// releasing it would take it from its inputs' waiters, and an input only it waited for would
// be released and computed again, and this task assigned behind it again, for ever. A task
// nobody needs any more is released instead, and one with a failed input goes through
// released to err (released_to_waiting).
void SchedulerState::assigned_to_waiting(TaskState* ts) {
  const bool input_erred = std::any_of(ts->dependencies.begin(), ts->dependencies.end(),
                                       [](const TaskState* d) { return d->state == S::erred; });
  if ((ts->waiters.empty() && ts->who_wants.empty()) || input_erred)
    return processing_to_released(ts);
  unassign_dependents(ts);
  if (WorkerState* ws = exit_processing(ts)) free_keys(ws, ts->key);
  ts->state = S::waiting;
  for (TaskState* dep : ts->dependencies) {
    if (dep->who_has.empty()) ts->waiting_on.insert(dep);
    if (dep->state != S::released) {
      dep->waiters.insert(ts);  // its waiters may have been counted again while ts was away
    } else if (!dep->recommended) {
      recommend(dep, S::waiting);  // its released->waiting counts ts among its waiters
    }
  }
  if (ts->waiting_on.empty()) {
    recommend(ts, S::processing);
  } else {
    ahead_again_.push_back(ts);  // once the transitions under way are done (run_transitions)
  }
}

// `ts` leaves its worker without finishing: the tasks assigned ahead behind it, there or on
// the workers waiting for its result, cannot start, and wait again (their worker is told to
// drop them).
void SchedulerState::unassign_dependents(TaskState* ts) {
  for (TaskState* d : ts->dependents)
    if (d->state == S::assigned && d->waiting_on.count(ts)) recommend(d, S::waiting);
}

void SchedulerState::processing_to_memory(TaskState* ts, WorkerState* ws, std::int64_t nbytes) {
  exit_processing(ts);
  if (nbytes >= 0) ts->nbytes = nbytes;  // before add_replica, which counts it on ws
  add_to_memory(ts, ws);
}

void SchedulerState::add_to_memory(TaskState* ts, WorkerState* ws) {
  add_replica(ts, ws);
  std::vector<TaskState*> ready;
  for (TaskState* d : ts->dependents) {
    if (!d->waiting_on.erase(ts)) continue;
    if (d->waiting_on.empty()) {
      ready.push_back(d);  // an assigned one starts (or started) on its worker by itself
    } else {
      recommend_assign_ahead(d);  // its last inputs may all be running on one worker now
    }
  }
  sort_for_recommending(ready);
  for (TaskState* d : ready) recommend(d, S::processing);

  for (TaskState* dep : ts->dependencies) {
    dep->waiters.erase(ts);
    if (dep->waiters.empty() && dep->who_wants.empty()) recommend(dep, S::released);
  }
  ts->state = S::memory;
  if (ts->waiters.empty() && ts->who_wants.empty()) {
    recommend(ts, S::released);  // nobody needs it any more (e.g. released while running)
  } else {
    for (ClientState* cs : ts->who_wants) report_state(ts, cs);
  }
}

void SchedulerState::processing_to_erred(TaskState* ts, const std::string& worker,
                                         std::shared_ptr<const TaskFailure> failure) {
  exit_processing(ts);
  ts->failure = std::move(failure);
  if (std::find(ts->erred_on.begin(), ts->erred_on.end(), worker) == ts->erred_on.end()) {
    ts->erred_on.push_back(worker);
  }
  propagate_erred(ts);
}

void SchedulerState::propagate_erred(TaskState* ts) {
  ts->state = S::erred;
  drop_spec(ts);
  std::vector<TaskState*> waiters(ts->waiters.begin(), ts->waiters.end());
  sort_for_recommending(waiters);
  for (TaskState* d : waiters) {
    d->failure = ts->failure;
    recommend(d, S::erred);
  }
  for (TaskState* dep : ts->dependencies) {
    dep->waiters.erase(ts);
    if (dep->waiters.empty() && dep->who_wants.empty()) recommend(dep, S::released);
  }
  ts->waiters.clear();
  for (ClientState* cs : ts->who_wants) report_failure(ts, cs);
}

void SchedulerState::released_to_erred(TaskState* ts) {
  if (!ts->failure) {
    log(LogLevel::error, fmt::format("'{}' recommended erred without a failure", ts->key));
    return;
  }
  std::vector<TaskState*> dependents;
  for (TaskState* d : ts->dependents) {
    if (d->who_has.empty() && d->state != S::erred) dependents.push_back(d);
  }
  sort_for_recommending(dependents);
  for (TaskState* d : dependents) {
    d->failure = ts->failure;
    recommend(d, S::erred);
  }
  ts->state = S::erred;
  drop_spec(ts);
  // It waits for nothing now (a task released on its way to waiting, or from processing,
  // is still among its inputs' waiters).
  for (TaskState* dep : ts->dependencies) {
    if (dep->waiters.erase(ts) && dep->waiters.empty() && dep->who_wants.empty())
      recommend(dep, S::released);
  }
  ts->waiters.clear();
  for (ClientState* cs : ts->who_wants) report_failure(ts, cs);
}

void SchedulerState::memory_to_released(TaskState* ts) {
  while (!ts->who_has.empty()) {
    WorkerState* ws = ts->who_has.back();
    free_keys(ws, ts->key);
    remove_replica(ts, ws);
  }
  ts->state = S::released;
  for (ClientState* cs : ts->who_wants) {
    out_.push_back(ReportKeyLost{cs->id, ts->key, stimulus_id_});
  }
  const auto erred_dependency =
      std::find_if(ts->dependencies.begin(), ts->dependencies.end(),
                   [](const TaskState* d) { return d->state == S::erred; });
  if (ts->has_lost_dependencies) {
    recommend(ts, S::forgotten);
  } else if (erred_dependency != ts->dependencies.end()) {
    // It cannot be computed again: a client waiting for it (told key_lost), and the tasks
    // waiting for it, get the failure.
    if (!ts->who_wants.empty() || !ts->waiters.empty()) {
      ts->failure = (*erred_dependency)->failure;
      recommend(ts, S::erred);
    }
  } else if (!ts->who_wants.empty() || !ts->waiters.empty()) {
    recommend(ts, S::waiting);
  }
  std::vector<TaskState*> waiters(ts->waiters.begin(), ts->waiters.end());
  sort_for_recommending(waiters);
  for (TaskState* d : waiters) {
    if (d->state == S::no_worker || d->state == S::processing || d->state == S::queued ||
        d->state == S::assigned) {
      recommend(d, S::waiting);
    } else if (d->state == S::waiting) {
      d->waiting_on.insert(ts);
    }
  }
}

void SchedulerState::erred_to_released(TaskState* ts) {
  if (ts->spec_held) ts->failure.reset();  // else it can never run again: its failure stays
  for (const std::string& address : ts->erred_on) {
    if (WorkerState* ws = find_worker(address)) free_keys(ws, ts->key);
  }
  ts->erred_on.clear();
  ts->state = S::released;
}

void SchedulerState::to_forgotten(TaskState* ts) {
  ts->state = S::forgotten;
  std::vector<TaskState*> dependents(ts->dependents.begin(), ts->dependents.end());
  sort_for_recommending(dependents);
  for (TaskState* d : dependents) {
    d->has_lost_dependencies = true;
    erase_value(d->dependencies, ts);
    d->waiting_on.erase(ts);
    if (d->state != S::memory && d->state != S::erred) recommend(d, S::forgotten);
  }
  ts->dependents.clear();
  ts->waiters.clear();
  for (TaskState* dep : ts->dependencies) {
    dep->dependents.erase(ts);
    dep->waiters.erase(ts);
    if (dep->dependents.empty() && dep->who_wants.empty()) recommend(dep, S::forgotten);
  }
  ts->dependencies.clear();
  ts->waiting_on.clear();
  while (!ts->who_has.empty()) {
    WorkerState* ws = ts->who_has.back();
    free_keys(ws, ts->key);
    remove_replica(ts, ws);
  }
  for (ClientState* cs : ts->who_wants) {  // only when its inputs or its data were lost
    cs->wants_what.erase(ts);
    out_.push_back(ReportCancelled{cs->id, {ts->key}, "lost dependencies", stimulus_id_});
  }
  ts->who_wants.clear();
  drop_spec(ts);
  auto node = tasks_.extract(ts->key);
  forgotten_.push_back(std::move(node.mapped()));  // freed at the end of handle()
}

void SchedulerState::add_replica(TaskState* ts, WorkerState* ws) {
  if (std::find(ts->who_has.begin(), ts->who_has.end(), ws) != ts->who_has.end()) return;
  ts->who_has.push_back(ws);
  ws->has_what.insert(ts);
  ws->nbytes += size_of(ts);
  if (!retiring_.empty()) {
    if (ts->who_has.size() > 1) replicating_.erase(ts);  // not an only copy any more
    retirement_touched(ts);
  }
}

void SchedulerState::remove_replica(TaskState* ts, WorkerState* ws) {
  if (!erase_value(ts->who_has, ws)) return;
  ws->has_what.erase(ts);
  ws->nbytes -= size_of(ts);
  if (ts->who_has.empty() && !replicating_.empty()) replicating_.erase(ts);
  if (!retiring_.empty()) {
    retirement_touched(ts);
    if (ws->retiring) retirement_touched(ws);
  }
}

FunctionMetrics& SchedulerState::metrics_of(const TaskState* ts) {
  return function_metrics_[&static_cast<const std::string&>(ts->function)];
}

void SchedulerState::count_transition(const TaskState* ts, TaskStatus start) {
  const auto from = static_cast<std::size_t>(start), to = static_cast<std::size_t>(ts->state);
  TaskCounts& f = metrics_of(ts).tasks;
  --counts_.by_state[from];
  --f.by_state[from];
  ++counts_.by_state[to];
  ++f.by_state[to];
  if (ts->state == S::erred) ++counts_.erred, ++f.erred;
  if ((start == S::processing || start == S::assigned) && ts->state == S::memory)
    ++counts_.completed, ++f.completed;
}

void SchedulerState::log_transition(const TaskState* ts, TaskStatus start) {
  if (start == ts->state) return;
  count_transition(ts, start);
  if (options_.transition_log_length == 0) return;
  if (transition_log_.size() < options_.transition_log_length) {
    transition_log_.push_back(TransitionRecord{ts->key, start, ts->state, stimulus_id_});
    return;
  }
  TransitionRecord& r = transition_log_[transition_log_next_];
  r.key.assign(ts->key);
  r.start = start;
  r.finish = ts->state;
  r.stimulus_id.assign(stimulus_id_);
  transition_log_next_ = (transition_log_next_ + 1) % transition_log_.size();
}

}  // namespace taskwire::scheduler
