// Worker stimuli: joins and losses, heartbeats, results, errors, lost data (after Dask's
// Scheduler.add_worker, remove_worker, check_worker_ttl, stimulus_task_finished/erred,
// handle_missing_data, reschedule, add_keys).
#include <taskwire/scheduler/scheduler_state.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

namespace taskwire::scheduler {

namespace {
using S = TaskStatus;

std::string joined_keys(const std::vector<std::string>& keys, std::size_t limit = 10) {
  std::string text;
  for (std::size_t i = 0; i < keys.size() && i < limit; ++i) {
    text += (i ? ", '" : "'") + keys[i] + "'";
  }
  if (keys.size() > limit) text += fmt::format(" and {} more", keys.size() - limit);
  return text;
}
}  // namespace

void SchedulerState::on(const AddWorker& e) {
  if (WorkerState* ws = find_worker(e.address)) {
    ws->last_seen = std::max(ws->last_seen, e.now);
    return log(LogLevel::warning, fmt::format("worker {} registered twice", e.address));
  }
  const std::string name = e.name.empty() ? e.address : e.name;
  // Names are how users and logs tell workers apart; two live ones must not share one.
  for (const auto& [address, other] : workers_) {
    if (other->name != name) continue;
    log(LogLevel::warning, fmt::format("refusing worker {}: its name '{}' is taken by worker {}, "
                                       "which is still connected",
                                       e.address, name, address));
    out_.push_back(RefuseWorker{
        e.address,
        fmt::format("the name '{}' is already taken by the worker at {}; give every worker its "
                    "own name (taskwire-worker --name NAME), or stop that worker first",
                    name, address),
        stimulus_id_});
    return;
  }
  auto owned = std::make_unique<WorkerState>();
  owned->address = e.address;
  owned->name = name;
  owned->nthreads = std::max(1, e.nthreads);
  owned->last_seen = e.now;
  owned->nanny = e.nanny;
  owned->resources = e.resources;
  WorkerState* ws = owned.get();
  workers_.emplace(e.address, std::move(owned));
  classify_for_stealing(ws);
  warned_needs_.clear();
  log(LogLevel::info, fmt::format("worker {} ({}) joined with {} threads{}", e.address, name,
                                  std::max(1, e.nthreads),
                                  e.resources.empty() ? std::string()
                                                      : ", resources " +
                                                            runtime::format_resources(e.resources)));
  adopt_held_data(ws, e.held);
  retirement_touched_all();  // a retiring worker may have waited for somewhere to copy to
  schedule_unrunnable();  // queued roots follow in handle(), via schedule_queued()
}

// A worker joining again brings the results it kept. A key the scheduler holds in memory
// gains a replica (no recompute, one more holder to fetch from); any other key (released,
// recomputed elsewhere meanwhile, forgotten) is freed there: the scheduler never counts a
// copy it did not ask for.
void SchedulerState::adopt_held_data(WorkerState* ws, const std::vector<std::string>& held) {
  std::size_t adopted = 0;
  for (const auto& key : held) {
    TaskState* ts = find_task(key);
    if (ts && ts->state == S::memory) {
      add_replica(ts, ws);
      ++adopted;
    } else {
      free_keys(ws, key);
    }
  }
  if (!held.empty())
    log(LogLevel::info, fmt::format("worker {} brought {} result(s) back; {} kept as replicas",
                                    ws->address, held.size(), adopted));
}

void SchedulerState::on(const RemoveWorker& e) {
  WorkerState* ws = find_worker(e.address);
  if (!ws) return log(LogLevel::debug, fmt::format("remove unknown worker {}", e.address));
  detach_worker(ws, e.reason, e.expected);
  if (e.expected || !ws->nanny || ws->processing.empty())
    return reschedule_work_of(ws, e.expected, nullptr, fmt::format("({})", e.reason));
  // Its nanny knows how it died and which tasks it was running: those wait for that report.
  // Its data is gone all the same.
  drop_replicas_of(ws);
  run_transitions();
  dying_.push_back({std::move(removed_workers_.back()), e.now + options_.death_report_seconds,
                    e.reason});
  removed_workers_.pop_back();
}

void SchedulerState::on(const WorkerDied& e) {
  auto dying = std::find_if(dying_.begin(), dying_.end(),
                            [&](const DyingWorker& d) { return d.ws->address == e.address; });
  WorkerState* ws = nullptr;
  if (dying != dying_.end()) {
    removed_workers_.push_back(std::move(dying->ws));  // freed at the end of this handle()
    dying_.erase(dying);
    ws = removed_workers_.back().get();
  } else if ((ws = find_worker(e.address))) {  // the report came before the lost connection
    detach_worker(ws, "its process died: " + e.cause, false);
  } else {
    return log(LogLevel::debug, fmt::format("death report on unknown worker {}", e.address));
  }
  log(LogLevel::warning,
      fmt::format("worker {} died ({}) while running {}", ws->name, e.cause,
                  e.running.empty() ? std::string("no task") : joined_keys(e.running)));
  reschedule_work_of(ws, false, &e, "by " + e.cause);
}

void SchedulerState::expire_death_reports(double now) {
  for (std::size_t i = 0; i < dying_.size();) {
    if (dying_[i].deadline > now) {
      ++i;
      continue;
    }
    removed_workers_.push_back(std::move(dying_[i].ws));
    const std::string how = fmt::format("({}; its nanny sent no report)", dying_[i].reason);
    dying_.erase(dying_.begin() + static_cast<std::ptrdiff_t>(i));
    reschedule_work_of(removed_workers_.back().get(), false, nullptr, how);
  }
}

void SchedulerState::detach_worker(WorkerState* ws, const std::string& reason, bool expected) {
  log(expected ? LogLevel::info : LogLevel::warning,
      fmt::format("removing worker {}: {}", ws->address, reason));
  ws->removed = true;
  settle_retire_requests(ws, "it left before its retirement was done (" + reason + ")");
  forget_thief(ws);
  if (ws->retiring) retiring_.erase(ws);
  forget_replication_target(ws);
  classify_for_stealing(ws);
  removed_workers_.push_back(std::move(workers_.extract(ws->address).mapped()));
}

void SchedulerState::reschedule_work_of(WorkerState* ws, bool expected, const WorkerDied* report,
                                        const std::string& how) {
  release_processing_of(ws, expected, report, how);
  drop_replicas_of(ws);
  run_transitions();
  if (!ws->processing.empty()) {  // cannot happen: every task above left processing
    log(LogLevel::error, fmt::format("{} tasks still processing on removed worker {}",
                                     ws->processing.size(), ws->address));
  }
}

void SchedulerState::release_processing_of(WorkerState* ws, bool expected,
                                           const WorkerDied* report, const std::string& how) {
  for (TaskState* ts : by_priority(ws->processing)) {
    const bool blamed =
        !expected && (!report || std::find(report->running.begin(), report->running.end(),
                                           ts->key) != report->running.end());
    if (blamed) {
      ++ts->suspicious;
      ts->killed.push_back(ws->name);
    }
    if (!blamed || ts->suspicious < options_.allowed_failures) {
      recommend(ts, S::released);  // and from there waiting again, elsewhere
      continue;
    }
    const TaskStatus start = ts->state;
    auto failure = std::make_shared<const TaskFailure>(TaskFailure{
        ts->key,
        fmt::format("task '{}' ({}) killed {} workers that ran it: {}; last: {} {}. The "
                    "workers' logs say more; allowed_failures is {}.",
                    ts->key, ts->function, ts->suspicious, fmt::join(ts->killed, ", "),
                    ws->name, how, options_.allowed_failures)});
    log(LogLevel::error, failure->message);
    processing_to_erred(ts, ws->address, std::move(failure));
    log_transition(ts, start);
  }
}

void SchedulerState::drop_replicas_of(WorkerState* ws) {
  std::vector<std::string> lost;
  const std::vector<TaskState*> held = by_priority(ws->has_what);
  for (TaskState* ts : held) {
    remove_replica(ts, ws);
    if (!ts->who_has.empty()) continue;
    lost.push_back(ts->key);
    ++counts_.lost;
    recommend(ts, S::released);
  }
  if (!lost.empty()) {
    log(LogLevel::warning, fmt::format("worker {} held the only copy of {} key(s), which are "
                                       "recomputed if still needed: {}",
                                       ws->address, lost.size(), joined_keys(lost)));
  }
}

void SchedulerState::on(const Heartbeat& e) {
  WorkerState* ws = find_worker(e.worker);
  if (!ws) return log(LogLevel::debug, fmt::format("heartbeat from unknown worker {}", e.worker));
  ws->last_seen = std::max(ws->last_seen, e.now);
}

void SchedulerState::on(const ThreadsBusy& e) {
  WorkerState* ws = find_worker(e.worker);
  if (!ws) return;
  ws->busy_threads = std::clamp(e.count, 0, ws->nthreads);  // handle() fills freed slots
  classify_for_stealing(ws);
}

void SchedulerState::check_no_workers(double now) {
  const std::size_t waiting = unrunnable_.size() + queued_.size();
  if (!workers_.empty() || waiting == 0) {
    no_workers_since_ = -1;
    return;
  }
  if (no_workers_since_ < 0) {
    no_workers_since_ = now;
    return log(LogLevel::warning,
               options_.no_workers_timeout > 0
                   ? fmt::format("no worker is connected; {} task(s) wait for one, and err if "
                                 "none comes within {:.3g} s (no_workers_timeout)",
                                 waiting, options_.no_workers_timeout)
                   : fmt::format("no worker is connected; {} task(s) wait until one joins "
                                 "(no_workers_timeout is off)",
                                 waiting));
  }
  if (!(options_.no_workers_timeout > 0) || now - no_workers_since_ < options_.no_workers_timeout)
    return;
  auto failure = std::make_shared<const TaskFailure>(TaskFailure{
      "", fmt::format("no worker was connected for {:.3g} s (no_workers_timeout); start "
                      "workers, or raise the timeout",
                      now - no_workers_since_)});
  log(LogLevel::error, fmt::format("{} task(s) err: {}", waiting, failure->message));
  std::vector<TaskState*> stranded(unrunnable_.begin(), unrunnable_.end());
  stranded.insert(stranded.end(), queued_.begin(), queued_.end());
  for (TaskState* ts : stranded) {
    auto own = std::make_shared<TaskFailure>(*failure);
    own->blamed_key = ts->key;
    ts->failure = std::move(own);
    recommend(ts, S::erred);
  }
  run_transitions();
  no_workers_since_ = -1;
}

void SchedulerState::on(const CheckHeartbeats& e) {
  expire_death_reports(e.now);
  std::erase_if(fetch_failures_, [this](const auto& entry) {
    const TaskState* ts = find_task(entry.first);
    return !ts || (ts->state != S::processing && ts->state != S::assigned &&
                   ts->state != S::waiting);
  });
  check_no_workers(e.now);
  retirement_touched_all();  // the periodic pass: a retirement never waits for an event
  if (!replicating_.empty()) retry_replications(e.now);
  if (!rebalance_moves_.empty()) settle_rebalance(e.now);
  if (e.interval > 0 && last_heartbeat_check_ >= 0 && e.now - last_heartbeat_check_ > 2 * e.interval)
    looking_since_ = e.now;
  last_heartbeat_check_ = e.now;
  if (!(e.timeout > 0)) return;
  std::vector<WorkerState*> silent;
  for (const auto& [address, ws] : workers_) {
    if (e.now - std::max(ws->last_seen, looking_since_) > e.timeout) silent.push_back(ws.get());
  }
  // Detach them all first, so that none gets the work of another one.
  for (WorkerState* ws : silent) {
    const std::string reason = fmt::format("no heartbeat for {:.3g} s (timeout {:.3g} s)",
                                           e.now - ws->last_seen, e.timeout);
    emit_to_worker(ws, CloseWorker{ws->address, reason, stimulus_id_});
    detach_worker(ws, reason, false);
  }
  for (WorkerState* ws : silent) reschedule_work_of(ws, false, nullptr, "(no heartbeat)");
}

void SchedulerState::on(const TaskFinished& e) {
  WorkerState* ws = find_worker(e.worker);
  if (!ws) {
    return log(LogLevel::debug, fmt::format("'{}' finished on unknown worker {}", e.key, e.worker));
  }
  TaskState* ts = find_task(e.key);
  const bool on_ws = ts && (ts->state == S::processing || ts->state == S::assigned) &&
                     ts->processing_on == ws;
  if (on_ws && e.attempt != ts->attempt) {
    // An earlier attempt there, freed before this one was sent (its worker got both in that
    // order): the worker runs this one now, so nothing of it is to be freed.
    return log(LogLevel::debug, fmt::format("stale result for '{}' from {} (attempt {}, not {})",
                                            e.key, e.worker, e.attempt, ts->attempt));
  }
  if (!on_ws) {
    if (ts && ts->state == S::memory &&
        std::find(ts->who_has.begin(), ts->who_has.end(), ws) != ts->who_has.end())
      return;
    // Released, cancelled, moved or computed elsewhere meanwhile: whatever the worker kept of
    // that attempt, the scheduler does not count it (a worker keeps a key its own tasks need).
    return free_keys(ws, e.key);
  }
  // An assigned task may be reported before its inputs: its worker held the result already
  // (a copy fetched earlier, say), so the inputs are not needed for it any more.
  if (!fetch_failures_.empty()) fetch_failures_.erase(ts->key);  // empty but after failures
  record_duration(ts->function, e.duration);
  metrics_of(ts).durations.observe(e.duration);
  const TaskStatus start = ts->state;
  processing_to_memory(ts, ws, e.nbytes);
  log_transition(ts, start);
}

void SchedulerState::on(const TaskErred& e) {
  TaskState* ts = find_task(e.key);
  // An assigned task errs before it runs when its worker cannot take it (an unknown
  // function, resources it lacks).
  if (!ts || (ts->state != S::processing && ts->state != S::assigned) ||
      ts->processing_on->address != e.worker || e.attempt != ts->attempt) {
    return log(LogLevel::debug, fmt::format("stale error for '{}' from {} (attempt {})", e.key,
                                            e.worker, e.attempt));
  }
  const TaskStatus start = ts->state;
  if (ts->retries > 0) {
    --ts->retries;
    ++counts_.retried;
    ++metrics_of(ts).tasks.retried;
    log(LogLevel::info, fmt::format("'{}' erred on {}, retrying ({} retries left): {}", e.key,
                                    e.worker, ts->retries, e.message));
    return transition(ts, S::waiting);
  }
  const WorkerState* ws = ts->processing_on;
  processing_to_erred(ts, e.worker,
                      std::make_shared<const TaskFailure>(TaskFailure{
                          e.key, e.message, e.exception_type, ws->name, ws->address}));
  log_transition(ts, start);
}

void SchedulerState::on(const MissingData& e) {
  TaskState* dts = e.dependent.empty() ? nullptr : find_task(e.dependent);
  const bool dependent_there = dts && (dts->state == S::processing || dts->state == S::assigned) &&
                               dts->processing_on->address == e.worker;
  if (e.awaited) {
    // Asked of the worker running it (assigned ahead across workers), which did not know
    // the task yet or no longer runs it: not a lost copy, nor two workers that cannot reach
    // each other. The dependent waits again, and is not sent ahead across again.
    if (!dependent_there) return;
    dts->ahead_across_missed = true;
    return recommend(dts, S::waiting);
  }
  if (dependent_there && fetch_failed_for_good(dts, e)) return;
  if (TaskState* ts = find_task(e.key)) {
    WorkerState* errant = find_worker(e.errant_worker);
    if (errant && std::find(ts->who_has.begin(), ts->who_has.end(), errant) != ts->who_has.end()) {
      remove_replica(ts, errant);
      // Should it hold the key after all (its result was on its way), it must not keep a
      // copy the scheduler no longer counts.
      free_keys(errant, ts->key);
    }
    if (ts->state == S::memory && ts->who_has.empty()) {
      log(LogLevel::warning,
          fmt::format("'{}' lost: {} could not get it from {}", e.key, e.worker, e.errant_worker));
      ++counts_.lost;
      recommend(ts, S::released);
    } else if (ClientState* cs = find_client(e.worker); cs && ts->state == S::memory) {
      // A client was told of holders that left (a retired worker): it hears of the others.
      report_state(ts, cs);
    }
  }
  if (dependent_there) recommend(dts, S::waiting);  // sent again with fresh locations
}

// A holder that lost a key says so itself (reporter and holder the same), and a key lost
// with a spill file is not lost again from the same holder each time it is recomputed: the
// same input failing from the same live holder again and again means the two workers
// cannot reach each other.
bool SchedulerState::fetch_failed_for_good(TaskState* dts, const MissingData& e) {
  const WorkerState* holder = find_worker(e.errant_worker);
  if (!holder || e.errant_worker == e.worker) return false;
  FetchFailures& failures = fetch_failures_[dts->key];
  const int count = ++failures.counts[{e.key, holder->address}];
  if (std::find(failures.consumers.begin(), failures.consumers.end(), e.worker) ==
      failures.consumers.end())
    failures.consumers.push_back(e.worker);
  if (count < options_.allowed_fetch_failures) return false;
  fetch_failures_.erase(dts->key);
  const WorkerState* ws = dts->processing_on;
  auto failure = std::make_shared<const TaskFailure>(TaskFailure{
      dts->key,
      fmt::format("task '{}' ({}) could not get its input '{}': worker {} ({}) failed {} times "
                  "to fetch it from worker {} ({}), which the scheduler still hears from; the "
                  "input was computed again each time. Can {} reach {}? (a firewall, "
                  "a one-way partition; allowed_fetch_failures is {})",
                  dts->key, dts->function, e.key, ws->name, ws->address, count, holder->name,
                  holder->address, ws->name, holder->name, options_.allowed_fetch_failures),
      "", ws->name, ws->address});
  log(LogLevel::error, failure->message);
  const TaskStatus start = dts->state;
  processing_to_erred(dts, ws->address, std::move(failure));
  log_transition(dts, start);
  return true;
}

}  // namespace taskwire::scheduler
