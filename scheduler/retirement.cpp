// Retiring a worker without losing anything, after Dask's Scheduler.retire_workers and its
// RetireWorker policy of the active memory manager. A retiring worker:
//   - gets nothing new: it is not eligible for placement, assign-ahead or stealing to it
//     (eligible(), task_slots(), classify_for_stealing() treat it as paused);
//   - gives back what it has not started: each task processing there is asked back with a
//     StealRequest without a thief, and placed anew when the worker confirms (stealing.cpp);
//     a task it runs (the request refused) finishes there;
//   - has each key it holds the only copy of copied to the worker holding the fewest bytes
//     (AcquireReplicas: that worker fetches it with get_data and answers add_keys);
//   - once it runs nothing and holds no only copy, is told to close without rejoining and
//     removed as after a goodbye: every key it held lives on elsewhere, nothing is recomputed.
// With no other worker to copy to, it waits; the worker's own hard deadline then ends it as
// before (its only copies are lost and computed again).
//
// A client asks for the same with RetireWorkers (Client::retire_workers, and a job cluster
// scaling down): the workers it names, or a count chosen as Dask's workers_to_close does. It
// hears once each is gone or could not be retired. A retirement only clients asked for, with
// nowhere to copy to, is given up at once instead of waiting (the worker runs on): nothing
// else would ever end it, and Dask's RetireWorker policy gives up the same way.
//
// The work is done at the end of handle(), for the retiring workers something happened to
// (drain_due), so that an event costs nothing more while no worker retires.
#include <taskwire/scheduler/scheduler_state.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace taskwire::scheduler {

namespace {
using S = TaskStatus;
}  // namespace

void SchedulerState::on(const RetireWorker& e) {
  WorkerState* ws = find_worker(e.worker);
  if (!ws) return log(LogLevel::debug, fmt::format("retire unknown worker {}", e.worker));
  ws->retire_self = true;  // a client's request for it is never given up now
  if (ws->retiring) return log(LogLevel::debug, fmt::format("worker {} retires already", e.worker));
  begin_retirement(ws, e.reason);
}

void SchedulerState::begin_retirement(WorkerState* ws, const std::string& reason) {
  ws->retiring = true;
  retiring_.insert(ws);
  forget_thief(ws);  // steals on their way to it are placed anew when confirmed
  forget_replication_target(ws);
  classify_for_stealing(ws);
  ws->drain_due = true;
  log(LogLevel::info,
      fmt::format("retiring worker {} ({}){}: {} task(s) processing, {} key(s) held",
                  ws->address, ws->name, reason.empty() ? "" : ": " + reason,
                  ws->processing.size(), ws->has_what.size()));
}

void SchedulerState::on(const RetireWorkers& e) {
  RetireRequest request{e.client, e.request_id, {}, {}, {}};
  std::vector<WorkerState*> chosen;
  for (const auto& wanted : e.workers) {
    WorkerState* ws = find_worker(wanted);
    for (auto it = workers_.begin(); !ws && it != workers_.end(); ++it)
      if (it->second->name == wanted) ws = it->second.get();
    if (!ws) {
      request.failed.push_back({wanted, "no worker of that address or name is connected"});
    } else if (std::find(chosen.begin(), chosen.end(), ws) == chosen.end()) {
      chosen.push_back(ws);
    }
  }
  for (WorkerState* ws : workers_to_close(e.count, chosen)) chosen.push_back(ws);
  for (WorkerState* ws : chosen) {
    request.waiting.insert(ws->address);
    if (!ws->retiring) begin_retirement(ws, fmt::format("client {} asked", e.client));
  }
  retire_requests_.push_back(std::move(request));
}

std::vector<WorkerState*> SchedulerState::workers_to_close(
    std::size_t count, const std::vector<WorkerState*>& chosen) const {
  std::vector<WorkerState*> candidates;
  for (const auto& [address, ws] : workers_)
    if (!ws->retiring && std::find(chosen.begin(), chosen.end(), ws.get()) == chosen.end())
      candidates.push_back(ws.get());
  // By address among equals (workers_ is ordered so): deterministic.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const WorkerState* a, const WorkerState* b) {
                     return std::pair(!a->processing.empty(), a->nbytes) <
                            std::pair(!b->processing.empty(), b->nbytes);
                   });
  candidates.resize(std::min(count, candidates.size()));
  return candidates;
}

void SchedulerState::give_up_retirement(WorkerState* ws, std::size_t unplaced) {
  const std::string why = fmt::format(
      "no other worker can take its {} only cop{} (the others retire or are paused, or there "
      "are none): it was not retired and runs on",
      unplaced, unplaced == 1 ? "y" : "ies");
  log(LogLevel::warning, fmt::format("worker {}: {}", ws->address, why));
  ws->retiring = false;
  ws->drain_due = false;
  retiring_.erase(ws);
  std::erase_if(replicating_,
                [&](const auto& entry) { return entry.first->who_has.front() == ws; });
  classify_for_stealing(ws);
  settle_retire_requests(ws, why);
  retry_unrunnable_ = true;
  retirement_touched_all();  // a worker retiring by itself may copy to this one now
}

void SchedulerState::settle_retire_requests(const WorkerState* ws, const std::string& why) {
  for (RetireRequest& request : retire_requests_) {
    const auto it = request.waiting.find(ws->address);
    if (it == request.waiting.end()) continue;
    request.waiting.erase(it);
    if (why.empty()) {
      request.retired.push_back(ws->address);
    } else {
      request.failed.push_back({ws->address, why});
    }
  }
}

void SchedulerState::answer_retire_requests() {
  for (auto it = retire_requests_.begin(); it != retire_requests_.end();) {
    if (!it->waiting.empty()) {
      ++it;
      continue;
    }
    out_.push_back(ReportRetirement{it->client, it->request_id, std::move(it->retired),
                                    std::move(it->failed), stimulus_id_});
    it = retire_requests_.erase(it);
  }
}

void SchedulerState::on(const AddKeys& e) {
  WorkerState* ws = find_worker(e.worker);
  if (!ws) return log(LogLevel::debug, fmt::format("add-keys from unknown worker {}", e.worker));
  for (const auto& key : e.keys) {
    TaskState* ts = find_task(key);
    if (ts && ts->state == S::memory && !ws->retiring) {
      add_replica(ts, ws);
      if (!rebalance_moves_.empty()) rebalance_confirmed(ts, ws);
    } else if (ts && ts->processing_on == ws) {
      // Lost meanwhile and placed here to compute again: the run's report decides, and
      // freeing the key would drop that run (or the result it reports).
      continue;
    } else {
      free_keys(ws, key);  // released meanwhile: a copy the scheduler would not count
    }
  }
}

void SchedulerState::retirement_touched(const TaskState* ts) {
  for (WorkerState* holder : ts->who_has)
    if (holder->retiring) holder->drain_due = true;
}

void SchedulerState::retirement_touched(WorkerState* ws) {
  if (ws->retiring) ws->drain_due = true;
}

void SchedulerState::retirement_touched_all() {
  for (WorkerState* ws : retiring_) ws->drain_due = true;
}

void SchedulerState::forget_replication_target(WorkerState* target) {
  std::erase_if(replicating_, [&](const auto& entry) {
    if (entry.second.target != target) return false;
    retirement_touched(entry.first);
    return true;
  });
}

void SchedulerState::retry_replications(double now) {
  std::size_t again = 0;
  for (auto it = replicating_.begin(); it != replicating_.end();) {
    auto& [ts, replication] = *it;
    if (replication.asked_at < 0) replication.asked_at = now;
    if (now - replication.asked_at < kReplicationPatience) {
      ++it;
      continue;
    }
    ++again;
    retirement_touched(ts);
    it = replicating_.erase(it);
  }
  if (again > 0)
    log(LogLevel::info, fmt::format("{} cop{} asked of other workers not confirmed in {} s: "
                                    "asking again",
                                    again, again == 1 ? "y" : "ies", kReplicationPatience));
}

void SchedulerState::drain_retiring() {
  // Again while one is due: a worker that closes may leave another holding the only copy
  // of a key they both held. Each round closes a worker or settles every one.
  for (bool again = true; again;) {
    again = false;
    const std::vector<WorkerState*> retiring(retiring_.begin(), retiring_.end());
    for (WorkerState* ws : retiring) {
      if (!std::exchange(ws->drain_due, false)) continue;
      drain(ws);
      again = true;
    }
    // A retirement given up: that worker takes work again (or resources were freed).
    if (std::exchange(retry_unrunnable_, false)) {
      schedule_unrunnable();
      schedule_queued();
    }
    run_transitions();
  }
  if (!retire_requests_.empty()) answer_retire_requests();
}

void SchedulerState::drain(WorkerState* ws) {
  for (TaskState* ts : by_priority(ws->processing)) {
    // Assigned-ahead tasks wait for inputs running there; asked back once they may start.
    if (ts->state != S::processing || ts->steal_pending || ts->steal_refused) continue;
    ts->steal_pending = true;  // without a thief: placed anew if given back
    emit_to_worker(ws, StealRequest{ws->address, ts->key, stimulus_id_, ts->attempt});
  }
  std::size_t only_copies = 0, unplaced = 0;
  std::unordered_map<WorkerState*, std::int64_t> planned;
  std::map<WorkerState*, AcquireReplicas, ByAddress> requests;
  for (TaskState* ts : by_priority(ws->has_what)) {
    if (ts->who_has.size() != 1) continue;
    ++only_copies;
    if (replicating_.count(ts)) continue;
    WorkerState* target = replica_target(ts, planned);
    if (!target) {
      ++unplaced;
      continue;
    }
    replicating_.emplace(ts, Replication{target, last_heartbeat_check_});
    planned[target] += size_of(ts);
    auto& request = requests[target];
    request.worker = target->address;
    request.stimulus_id = stimulus_id_;
    request.keys.push_back(DependencyLocation{ts->key, {ws->address}, size_of(ts)});
  }
  for (auto& [target, request] : requests) emit_to_worker(target, std::move(request));
  if (ws->processing.empty() && only_copies == 0) return close_retired(ws);
  if (unplaced > 0 && !ws->retire_self) return give_up_retirement(ws, unplaced);
  if (unplaced > 0)
    log(LogLevel::debug, fmt::format("retiring worker {} waits for another worker to take its "
                                     "{} only cop{}",
                                     ws->address, unplaced, unplaced == 1 ? "y" : "ies"));
}

WorkerState* SchedulerState::replica_target(
    const TaskState* ts, const std::unordered_map<WorkerState*, std::int64_t>& planned) const {
  WorkerState* best = nullptr;
  std::int64_t best_bytes = 0;
  for (const auto& [address, owned] : workers_) {
    WorkerState* ws = owned.get();
    if (ws->retiring || ws->paused) continue;
    if (std::find(ts->who_has.begin(), ts->who_has.end(), ws) != ts->who_has.end()) continue;
    auto it = planned.find(ws);
    const std::int64_t bytes = ws->nbytes + (it == planned.end() ? 0 : it->second);
    if (!best || bytes < best_bytes) {
      best = ws;
      best_bytes = bytes;
    }
  }
  return best;
}

void SchedulerState::close_retired(WorkerState* ws) {
  emit_to_worker(ws, CloseWorker{ws->address, "retired: its work and data are elsewhere now",
                                 stimulus_id_, false});
  ++counts_.workers_retired;
  settle_retire_requests(ws, "");
  detach_worker(ws, "retired", true);
  reschedule_work_of(ws, true);  // nothing runs there, and each key it held lives elsewhere
}

std::string SchedulerState::validate_retiring() const {
  for (const WorkerState* ws : retiring_)
    if (!ws->retiring || ws->removed || find_worker(ws->address) != ws)
      return fmt::format("retiring_ lists {} wrongly", ws->address);
  bool has_target = false;  // a worker that could take a copy from a retiring one
  for (const auto& [address, ws] : workers_) has_target |= !ws->retiring && !ws->paused;
  for (const auto& [address, ws] : workers_) {
    if (ws->retiring != (retiring_.count(ws.get()) == 1))
      return fmt::format("worker {} retiring but not listed, or listed but not retiring", address);
    if (ws->retire_self && !ws->retiring)
      return fmt::format("worker {} asked to retire but is not retiring", address);
    if (!ws->retiring) continue;
    if (ws->listed_idle || !ws->incoming_steals.empty())
      return fmt::format("retiring worker {} is a steal's thief", address);
    for (const TaskState* ts : ws->processing)
      if (ts->state == S::processing && !ts->steal_pending && !ts->steal_refused)
        return fmt::format("'{}' processing on retiring worker {} was not asked back", ts->key,
                           address);
    std::size_t only_copies = 0;
    for (TaskState* ts : ws->has_what) {
      if (ts->who_has.size() != 1) continue;
      ++only_copies;
      if (has_target && !replicating_.count(ts))
        return fmt::format("the only copy of '{}' on retiring worker {} is not being copied",
                           ts->key, address);
    }
    if (ws->processing.empty() && only_copies == 0)
      return fmt::format("retiring worker {} runs and keeps nothing but was not closed", address);
  }
  for (const RetireRequest& request : retire_requests_)
    for (const auto& address : request.waiting)
      if (const WorkerState* ws = find_worker(address); !ws || !ws->retiring)
        return fmt::format("a request to retire {} waits, but it is not retiring", address);
  for (const auto& [ts, replication] : replicating_) {
    const WorkerState* target = replication.target;
    if (find_task(ts->key) != ts || ts->state != S::memory || ts->who_has.size() != 1 ||
        !ts->who_has.front()->retiring)
      return fmt::format("'{}' is being copied but is not an only copy on a retiring worker",
                         ts->key);
    if (target->removed || target->retiring || find_worker(target->address) != target)
      return fmt::format("'{}' is being copied to {}, which cannot take it", ts->key,
                         target->address);
  }
  return {};
}

}  // namespace taskwire::scheduler
