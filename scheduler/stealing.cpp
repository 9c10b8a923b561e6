// Work stealing, after Dask distributed's stealing.py: when a worker has a thread and nothing
// for it while another holds tasks it has not started, the scheduler asks the busier one (the
// victim) to give one up, and sends it to the idle one (the thief) only once the victim
// confirms that the task was still waiting there. A task already running is never moved.
//
// Which task: the one that starts soonest on the thief compared with the time it would wait
// on the victim. The victim's wait is its queued work ahead of the task by the functions'
// measured durations; the thief's start is its own queued work, the transfer of the
// dependencies it lacks (bytes / bandwidth) and the round trips of the steal itself. Dask
// sorts tasks into levels by transfer / compute time for the same purpose.
//
// When: at the end of every handle() while a worker is idle and another saturated (both kept
// as sets, updated as tasks come and go), so a finishing task or a refusal triggers the next
// steal at once; the server's periodic CheckHeartbeats is the cheap periodic pass.
#include <taskwire/scheduler/scheduler_state.hpp>
#include <taskwire/runtime/function_registry.hpp>

#include <algorithm>
#include <utility>

namespace taskwire::scheduler {

namespace {
using S = TaskStatus;

/// Seconds a steal costs before the thief can start the task: the request to the victim, its
/// answer and the compute_task to the thief, three messages through the scheduler.
constexpr double kStealLatency = 1e-3;
/// The most victims, and tasks of one victim, looked at for one steal: bounds the work of a
/// steal whatever the cluster's size. A victim's most recently placed tasks are looked at
/// first; they are the least likely to have started.
constexpr std::size_t kStealScan = 32;

void relist(std::set<WorkerState*, ByAddress>& set, WorkerState* ws, bool& listed, bool wanted) {
  if (listed == wanted) return;
  listed = wanted;
  if (wanted) {
    set.insert(ws);
  } else {
    set.erase(ws);
  }
}
}  // namespace

void SchedulerState::classify_for_stealing(WorkerState* ws) {
  if (!options_.work_stealing) return;
  const auto threads = static_cast<std::size_t>(free_threads(ws));
  // Assigned-ahead tasks wait for inputs running there: not work another worker could take.
  const std::size_t processing = ws->processing.size() - ws->assigned;
  // A paused or retiring worker takes nothing new, and what waits there may go elsewhere.
  const bool closed = ws->paused || ws->retiring;
  relist(idle_, ws, ws->listed_idle,
         !ws->removed && !closed && processing + ws->incoming_steals.size() < threads);
  relist(saturated_, ws, ws->listed_saturated,
         !ws->removed && (processing > threads || (closed && processing > 0)));
}

void SchedulerState::balance() {
  if (!options_.work_stealing || idle_.empty() || saturated_.empty() || !queued_.empty()) return;
  const std::vector<WorkerState*> thieves(idle_.begin(), idle_.end());
  for (WorkerState* thief : thieves) {
    while (thief->listed_idle && !saturated_.empty() && steal_for(thief)) {
    }
  }
}

bool SchedulerState::steal_for(WorkerState* thief) {
  std::vector<std::pair<double, WorkerState*>> victims;  // most loaded first
  for (WorkerState* ws : saturated_) {
    if (ws != thief) victims.emplace_back(-load_per_thread(ws, occupancy(ws)), ws);
  }
  const std::size_t tried = std::min(victims.size(), kStealScan);
  std::partial_sort(victims.begin(), victims.begin() + static_cast<std::ptrdiff_t>(tried),
                    victims.end(), [](const auto& a, const auto& b) {
                      return a.first < b.first ||
                             (a.first == b.first && ByAddress{}(a.second, b.second));
                    });
  for (std::size_t i = 0; i < tried; ++i) {
    WorkerState* victim = victims[i].second;
    TaskState* ts = steal_candidate(victim, thief);
    if (!ts) continue;
    ts->steal_pending = true;
    ts->steal_thief = thief;
    thief->incoming_steals.insert(ts);
    classify_for_stealing(thief);
    emit_to_worker(victim, StealRequest{victim->address, ts->key, stimulus_id_, ts->attempt});
    return true;
  }
  return false;
}

TaskState* SchedulerState::steal_candidate(WorkerState* victim, WorkerState* thief) const {
  const double victim_work = occupancy(victim);
  TaskState* best = nullptr;
  double best_gain = 0;
  std::size_t scanned = 0;
  for (auto it = victim->processing.end();
       it != victim->processing.begin() && scanned < kStealScan; ++scanned) {
    TaskState* ts = *--it;
    if (ts->steal_pending || ts->steal_refused || ts->state != S::processing) continue;
    // A part of a result (Client::getitem) is read where the whole is: moving the task would
    // move the whole, for a copy of one element.
    if (runtime::detail::is_item_function(ts->function)) continue;
    // Never to a worker that may not take it (its `workers`, unless only a preference, or
    // resources the thief lacks or has in use).
    if (ts->restrictions && !eligible(ts, thief, !ts->restrictions->loose)) continue;
    // On the victim it waits for the rest of its queued work; on the thief it starts after
    // the thief's own work, the fetch and the steal's round trips.
    const double compute = expected_duration(ts->function);
    const double gain =
        load_per_thread(victim, victim_work - compute) - start_on_thief(ts, thief);
    if (gain <= 0) continue;
    // Among equal gains, the task the victim would run last.
    if (!best || gain > best_gain || (gain == best_gain && ByPriority{}(best, ts))) {
      best = ts;
      best_gain = gain;
    }
  }
  return best;
}

double SchedulerState::start_on_thief(const TaskState* ts, const WorkerState* thief) const {
  double work = occupancy(thief);
  for (const TaskState* incoming : thief->incoming_steals)
    work += expected_duration(incoming->function);
  std::int64_t missing = 0;
  for (const TaskState* dep : ts->dependencies) {
    if (std::find(dep->who_has.begin(), dep->who_has.end(), thief) == dep->who_has.end())
      missing += size_of(dep);
  }
  return load_per_thread(thief, work) + static_cast<double>(missing) / options_.bandwidth +
         kStealLatency;
}

void SchedulerState::end_steal(TaskState* ts) {
  if (!ts->steal_pending) return;
  ts->steal_pending = false;
  if (WorkerState* thief = std::exchange(ts->steal_thief, nullptr)) {
    thief->incoming_steals.erase(ts);
    classify_for_stealing(thief);
  }
}

void SchedulerState::forget_thief(WorkerState* thief) {
  for (TaskState* ts : thief->incoming_steals) ts->steal_thief = nullptr;
  thief->incoming_steals = {};
}

void SchedulerState::on(const StealResponse& e) {
  TaskState* ts = find_task(e.key);
  if (!ts || !ts->steal_pending || ts->state != S::processing ||
      ts->processing_on->address != e.worker || ts->attempt != e.attempt) {
    // It finished, erred or was released meanwhile (which ended the steal), or the answer
    // comes from a worker that no longer has it, or answers a request for an earlier
    // assignment there (it erred and was retried there, and asked for again).
    return log(LogLevel::debug, fmt::format("stale steal response for '{}' from {}", e.key,
                                            e.worker));
  }
  WorkerState* thief = ts->steal_thief;
  end_steal(ts);
  if (!e.stolen) {  // it runs there (or just finished): leave it
    ts->steal_refused = true;
    return;
  }
  unassign_dependents(ts);  // none should be (none is assigned behind a pending steal)
  exit_processing(ts);
  // The thief may have paused, or its resources been taken, since the request.
  if (thief && eligible(ts, thief, !(ts->restrictions && ts->restrictions->loose))) {
    log(LogLevel::debug, fmt::format("'{}' stolen from {} by {}", ts->key, e.worker,
                                     thief->address));
    return add_to_processing(ts, thief);
  }
  dispatch_ready(ts);  // the thief left meanwhile: placed anew
  log_transition(ts, S::processing);
}

std::string SchedulerState::validate_steals() const {
  for (const WorkerState* ws : idle_)
    if (!ws->listed_idle || ws->removed) return fmt::format("idle_ lists {} wrongly", ws->address);
  for (const WorkerState* ws : saturated_)
    if (!ws->listed_saturated || ws->removed)
      return fmt::format("saturated_ lists {} wrongly", ws->address);
  for (const auto& [address, ws] : workers_) {
    for (const TaskState* ts : ws->incoming_steals) {
      if (!ts->steal_pending || ts->steal_thief != ws.get() || ts->state != S::processing)
        return fmt::format("'{}' listed as stolen by {} but not pending", ts->key, address);
    }
  }
  return {};
}

}  // namespace taskwire::scheduler
