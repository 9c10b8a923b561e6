// The worker state machine's transitions after transfers and executions, and releasing.
#include <taskwire/worker/worker_state.hpp>

#include <algorithm>
#include <limits>
#include <utility>

namespace taskwire::worker {

// ---- transfers ----

void WorkerState::apply(GatherDepDone& e) {
  if (e.wait) return awaited_done(e);
  auto flight = in_flight_.find(e.worker);
  if (flight == in_flight_.end()) return;  // stale
  std::vector<Key> asked = std::move(flight->second);
  in_flight_.erase(flight);
  std::map<Key, Frame> got;
  for (auto& [k, f] : e.data) got.emplace(k, std::move(f));
  std::vector<Key> replicas;
  for (const auto& key : asked) {
    TaskState* ts = find(key);
    if (!ts || ts->status != TaskStatus::flight || ts->coming_from != e.worker) continue;
    auto it = got.find(key);
    if (it == got.end()) {
      ts->coming_from.clear();
      ts->who_has.erase(std::remove(ts->who_has.begin(), ts->who_has.end(), e.worker),
                        ts->who_has.end());
      lost_holder(key, e.worker);
      continue;
    }
    received(*ts, std::move(it->second), e, replicas);
  }
  if (!replicas.empty()) emit(SendAddKeys{std::move(replicas), stimulus_});
}

// The answer to a waiting GatherDep: its one key, or that the peer does not compute it
// (any more, or yet: the scheduler then places the tasks needing it again).
void WorkerState::awaited_done(GatherDepDone& e) {
  const Key key = !e.data.empty() ? e.data.front().first
                                  : !e.missing.empty() ? e.missing.front() : Key();
  auto awaiting = awaiting_.find(key);
  if (awaiting == awaiting_.end() || awaiting->second != e.worker) return;  // stale
  awaiting_.erase(awaiting);
  TaskState* ts = find(key);
  if (!ts || ts->status != TaskStatus::flight || ts->coming_from != e.worker) return;
  if (e.data.empty()) {
    ts->coming_from.clear();
    ts->who_has.erase(std::remove(ts->who_has.begin(), ts->who_has.end(), e.worker),
                      ts->who_has.end());
    return lost_holder(key, e.worker, true);
  }
  std::vector<Key> replicas;
  received(*ts, std::move(e.data.front().second), e, replicas);
  if (!replicas.empty()) emit(SendAddKeys{std::move(replicas), stimulus_});
}

// A dependency's bytes arrived for `ts`, in flight from e.worker.
void WorkerState::received(TaskState& ts, Frame data, const GatherDepDone& e,
                           std::vector<Key>& replicas) {
  ts.coming_from.clear();
  if (!ts.assigned && ts.dependents.empty()) {
    forget(ts.key);  // nobody needs it any more
    return;
  }
  ts.resume.reset();
  ts.fetched = true;
  ts.run = TaskRun{-1, e.sent_at, e.arrived_at, data.size()};
  const bool replica = std::exchange(ts.replica, false);
  if (replica) replicas.push_back(ts.key);
  transition_to_memory(ts, std::move(data), ts.assigned && !replica);
}

// ---- copies the scheduler asks for ----

void WorkerState::apply(AcquireReplicasEvent& e) {
  std::vector<Key> held;
  for (auto& [key, holders] : e.who_has) {
    std::erase(holders, options_.address);
    TaskState* ts = find(key);
    if (ts && ts->status == TaskStatus::memory) {
      ts->assigned = true;  // the scheduler counts it here from now on
      held.push_back(key);
      continue;
    }
    if (ts && ts->status != TaskStatus::fetch && ts->status != TaskStatus::flight) continue;
    if (holders.empty()) continue;
    if (!ts) {
      ts = &tasks_[key];
      ts->key = key;
      ts->status = TaskStatus::fetch;
      ts->priority = RunOrder{0, std::numeric_limits<std::int64_t>::max()};  // after tasks' inputs
      ts->seq = next_seq_++;
      enqueue_fetch(*ts);
    }
    for (auto& w : holders)
      if (std::find(ts->who_has.begin(), ts->who_has.end(), w) == ts->who_has.end())
        ts->who_has.push_back(std::move(w));
    ts->assigned = true;
    ts->replica = true;
  }
  if (!held.empty()) emit(SendAddKeys{std::move(held), stimulus_});
}

// ---- data from clients ----

void WorkerState::apply(UpdateDataEvent& e) {
  for (auto& [key, frame] : e.data) {
    TaskState* ts = find(key);
    if (ts && ts->status != TaskStatus::fetch && ts->status != TaskStatus::flight) continue;
    if (!ts) {
      ts = &tasks_[key];
      ts->key = key;
    }
    dequeue(*ts);  // a fetch planned, or in flight: GatherDepDone then finds it held
    ts->coming_from.clear();
    ts->assigned = true;  // the scheduler counts it as this worker's once the client says so
    transition_to_memory(*ts, Value(std::move(frame)), false);
  }
}

void WorkerState::apply(GatherDepFailed& e) {
  std::vector<Key> asked;
  if (auto it = in_flight_.find(e.worker); it != in_flight_.end()) {
    asked = std::move(it->second);
    in_flight_.erase(it);
  }
  for (auto it = awaiting_.begin(); it != awaiting_.end();) {
    if (it->second != e.worker) {
      ++it;
      continue;
    }
    asked.push_back(it->first);
    it = awaiting_.erase(it);
  }
  // The peer is presumed gone: it holds nothing any more (Dask drops it from has_what).
  std::vector<Key> orphaned;
  for (auto& [key, ts] : tasks_) {
    if (ts.status != TaskStatus::fetch && ts.status != TaskStatus::flight) continue;
    auto& w = ts.who_has;
    auto end = std::remove(w.begin(), w.end(), e.worker);
    if (end == w.end()) continue;
    w.erase(end, w.end());
    if (ts.status == TaskStatus::fetch && w.empty()) orphaned.push_back(key);
  }
  for (const auto& key : asked) {
    TaskState* ts = find(key);
    if (!ts || ts->status != TaskStatus::flight || ts->coming_from != e.worker) continue;
    ts->coming_from.clear();
    lost_holder(key, e.worker);
  }
  for (const auto& key : orphaned)
    if (TaskState* ts = find(key); ts && ts->status == TaskStatus::fetch) lost_holder(key, e.worker);
}

// A dependency was not where it was expected (`from`, already removed from who_has): fetch
// it from another holder, compute it here if it was assigned meanwhile, or give up on the
// tasks needing it.
void WorkerState::lost_holder(const Key& key, const std::string& from, bool awaited) {
  TaskState& ts = tasks_.at(key);
  dequeue(ts);
  ts.status = TaskStatus::fetch;
  ts.coming_from.clear();
  if (!ts.assigned && ts.dependents.empty() && !ts.resume) {
    forget(key);  // nobody here needs it any more: no second fetch
    return;
  }
  if (!ts.who_has.empty()) {
    enqueue_fetch(ts);
    return;
  }
  if (std::exchange(ts.replica, false) && !ts.resume) {
    // A copy asked for that no holder had: the scheduler drops that holder's replica.
    emit(SendMissingData{"", key, from, stimulus_});
    ts.assigned = false;
  }
  if (ts.resume) {
    // apply() turns a fetch record into a local computation, or reports it missing.
    auto resume = std::move(ts.resume);
    apply(*resume);
    TaskState* again = find(key);
    if (!again || again->status != TaskStatus::fetch) return;
    again->assigned = false;
  }
  const std::vector<Key> dependents(tasks_.at(key).dependents.begin(),
                                    tasks_.at(key).dependents.end());
  for (const auto& d : dependents) {
    emit(SendMissingData{d, key, from, stimulus_, awaited});
    if (TaskState* dt = find(d)) {
      dt->assigned = false;
      release(d);
    }
  }
  if (find(key)) maybe_release(key);
}

// A value held here could not be read back (its spill file was deleted, cut short or
// corrupted): `key` is lost on this worker. Each local task that needed it goes back to the
// scheduler as missing data naming this worker, which drops this replica and computes the
// key again if no other worker holds it (a lost key, not an error: Dask's missing-data).
void WorkerState::lost_own_data(const Key& key) {
  const std::vector<Key> dependents(tasks_.at(key).dependents.begin(),
                                    tasks_.at(key).dependents.end());
  for (const auto& d : dependents) {
    TaskState* dt = find(d);
    // One on a thread already has the value; `ts` (starting now) is always handed back.
    if (!dt || dt->status == TaskStatus::executing || dt->status == TaskStatus::cancelled)
      continue;
    emit(SendMissingData{d, key, options_.address, stimulus_});
    drop_with_dependents(d);
  }
  if (TaskState* ts = find(key)) {
    ts->assigned = false;
    forget(key);
  }
}

// ---- execution results ----

void WorkerState::apply(ExecuteSuccess& e) {
  TaskState* ts = find(e.key);
  if (!ts || (ts->status != TaskStatus::executing && ts->status != TaskStatus::cancelled)) return;
  --executing_count_;
  if (ts->status == TaskStatus::cancelled) --cancelled_count_;
  ts->duration_s = e.duration_s;
  ts->run = e.run;
  if (!ts->assigned && ts->dependents.empty()) {
    finished_running(*ts);
    forget(e.key);
    return;
  }
  finished_running(*ts);
  transition_to_memory(*ts, std::move(e.result), ts->assigned);
}

void WorkerState::apply(ExecuteFailure& e) {
  TaskState* ts = find(e.key);
  if (!ts || (ts->status != TaskStatus::executing && ts->status != TaskStatus::cancelled)) return;
  --executing_count_;
  if (ts->status == TaskStatus::cancelled) --cancelled_count_;
  ts->duration_s = e.duration_s;
  ts->run = e.run;
  finished_running(*ts);
  if (!ts->assigned && ts->dependents.empty()) return forget(e.key);
  fail_task(*ts, std::move(e.message), std::move(e.exception_type));
}

// The task ran: its dependencies are no longer needed for it.
void WorkerState::finished_running(TaskState& ts) {
  runtime::account_resources(used_resources_, ts.resources, -1);
  const std::set<Key> deps = std::move(ts.dependencies);
  ts.dependencies.clear();
  ts.waiting_for_data.clear();
  for (const auto& d : deps) {
    if (TaskState* ds = find(d)) {
      ds->dependents.erase(ts.key);
      maybe_release(d);
    }
  }
}

void WorkerState::transition_to_memory(TaskState& ts, Value data, bool report) {
  ts.status = TaskStatus::memory;
  ts.nbytes = data.size();
  ts.who_has.clear();
  data_->put(ts.key, std::move(data));
  if (report)
    emit(SendTaskFinished{ts.key, ts.nbytes, ts.duration_s, stimulus_, ts.run, ts.attempt});
  for (const auto& d : ts.dependents) {
    TaskState* dt = find(d);
    if (!dt) continue;
    dt->waiting_for_data.erase(ts.key);
    if (dt->status == TaskStatus::waiting && dt->waiting_for_data.empty()) make_ready(*dt);
  }
}

// Records the failure and reports it. Local tasks waiting for this one (assigned ahead of
// it) are dropped without a word: the scheduler decides their fate, which is to wait for a
// retry of this one, or to err with it when it has none left. Erring them here would beat
// the scheduler's retries.
void WorkerState::fail_task(TaskState& ts, std::string message, std::string exception_type) {
  const Key key = ts.key;
  ts.status = TaskStatus::error;
  ts.error = std::move(message);
  ts.error_type = std::move(exception_type);
  if (ts.assigned) emit(SendTaskErred{key, ts.error, ts.error_type, stimulus_, ts.attempt});
  drop_dependents(key);
  if (TaskState* again = find(key); again && !again->assigned) maybe_release(key);
}

// Drops the local tasks waiting for `key`, and theirs in turn (a chain assigned ahead), so
// that none is left waiting for a record that is gone.
void WorkerState::drop_dependents(const Key& key) {
  TaskState* ts = find(key);
  if (!ts) return;
  const std::vector<Key> dependents(ts->dependents.begin(), ts->dependents.end());
  for (const auto& d : dependents) drop_with_dependents(d);
}

void WorkerState::drop_with_dependents(const Key& key) {
  drop_dependents(key);
  if (TaskState* ts = find(key)) {
    ts->assigned = false;
    release(key);
  }
}

// ---- releasing ----

// Releases `key` if neither the scheduler nor a local task needs it.
// Only a task that has not started (nor been needed by another task here) is given up; one
// on a thread, fetching as a dependency, or done stays, and the scheduler leaves it here.
void WorkerState::apply(StealRequestEvent& e) {
  TaskState* ts = find(e.key);
  const bool stolen = ts && ts->assigned && ts->dependents.empty() &&
                      (ts->status == TaskStatus::waiting || ts->status == TaskStatus::ready);
  if (stolen) {
    ts->assigned = false;
    release(e.key);
  }
  emit(SendStealResponse{e.key, stolen, stimulus_, e.attempt});
}

void WorkerState::maybe_release(const Key& key) {
  TaskState* ts = find(key);
  if (!ts || ts->assigned || !ts->dependents.empty()) return;
  release(key);
}

// Drops `key` unless it is on a thread or on its way here: those cannot be recalled and
// stay as cancelled / flight (unassigned) until they report, and are forgotten then.
void WorkerState::release(const Key& key) {
  TaskState* ts = find(key);
  if (!ts) return;
  switch (ts->status) {
    case TaskStatus::executing:
      ts->status = TaskStatus::cancelled;
      ++cancelled_count_;
      return;
    case TaskStatus::cancelled:
      return;
    case TaskStatus::flight:
      ts->resume.reset();
      return;
    default:
      forget(key);
  }
}

// Removes the record (and its data), unlinking it from the tasks it relates to.
void WorkerState::forget(const Key& key) {
  TaskState* ts = find(key);
  if (!ts) return;
  if (ts->status == TaskStatus::memory) data_->erase(key);
  dequeue(*ts);
  const std::set<Key> deps = std::move(ts->dependencies);
  const std::set<Key> dependents = std::move(ts->dependents);
  tasks_.erase(key);
  for (const auto& d : deps) {
    if (TaskState* ds = find(d)) {
      ds->dependents.erase(key);
      maybe_release(d);
    }
  }
  std::vector<Key> stranded;  // waited for `key`, which will not come now
  for (const auto& d : dependents) {
    if (TaskState* dt = find(d)) {
      dt->dependencies.erase(key);
      if (dt->waiting_for_data.erase(key) && dt->status == TaskStatus::waiting)
        stranded.push_back(d);
    }
  }
  // Assigned ahead of `key`: the scheduler places them again once it learns why `key` went.
  for (const auto& d : stranded) drop_with_dependents(d);
}

}  // namespace taskwire::worker
