// Evening out the bytes workers hold, after Dask's Client.rebalance (the active memory
// manager's ReduceReplicas-free variant: one copy moves, none is added for good). The
// scheduler plans every move at once from what it knows: the workers above the mean bytes
// send their largest keys to those below, a key moving only while the move brings both nearer
// the mean (16 equal chunks held 9 + 7 move one: 8 + 8). A move is a copy the recipient
// fetches (AcquireReplicas, confirmed with add_keys, as a retirement's copies are), then the
// sender's copy freed; a key a task on the sender still needs is not moved. A move whose key
// leaves memory, whose worker leaves, or that is not confirmed in kReplicationPatience fails;
// the client hears once, when none of its moves is pending (ReportRebalance).
#include <taskwire/scheduler/scheduler_state.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace taskwire::scheduler {

namespace {
using S = TaskStatus;

bool holds(const TaskState* ts, const WorkerState* ws) {
  return std::find(ts->who_has.begin(), ts->who_has.end(), ws) != ts->who_has.end();
}

// A task placed on `ws` that reads `ts`: moving `ts` away would make it fetch it back.
bool needed_on(const TaskState* ts, const WorkerState* ws) {
  return std::any_of(ts->dependents.begin(), ts->dependents.end(), [&](const TaskState* d) {
    return d->processing_on == ws && (d->state == S::processing || d->state == S::assigned);
  });
}
}  // namespace

void SchedulerState::on(const Rebalance& e) {
  const std::size_t serial = ++rebalance_serial_;
  RebalanceRequest& request = rebalance_requests_[serial];
  request.client = e.client;
  request.request_id = e.request_id;
  request.answer.client = e.client;
  request.answer.request_id = e.request_id;
  std::vector<std::string> unknown;
  const std::vector<WorkerState*> workers = rebalance_workers(e, unknown);
  for (const auto& name : unknown)
    request.answer.failed.push_back(fmt::format("worker {}: not connected", name));
  request.pending = plan_rebalance(workers, e.keys, serial);
  log(LogLevel::info, fmt::format("rebalance for {}: {} move(s) between {} worker(s)", e.client,
                                  request.pending, workers.size()));
  settle_rebalance();  // answers at once when nothing moves
}

std::vector<WorkerState*> SchedulerState::rebalance_workers(
    const Rebalance& e, std::vector<std::string>& unknown) const {
  std::vector<WorkerState*> out;
  auto usable = [](const WorkerState* ws) { return !ws->removed && !ws->retiring && !ws->paused; };
  if (e.workers.empty()) {
    for (const auto& [address, ws] : workers_)
      if (usable(ws.get())) out.push_back(ws.get());
    return out;
  }
  for (const std::string& given : e.workers) {
    WorkerState* found = find_worker(given);
    for (const auto& [address, ws] : workers_)
      if (!found && ws->name == given) found = ws.get();
    if (!found || !usable(found)) {
      unknown.push_back(given);
    } else if (std::find(out.begin(), out.end(), found) == out.end()) {
      out.push_back(found);
    }
  }
  return out;
}

std::size_t SchedulerState::plan_rebalance(const std::vector<WorkerState*>& workers,
                                           const std::vector<std::string>& keys,
                                           std::size_t request) {
  if (workers.size() < 2) return 0;
  std::int64_t total = 0;
  for (const WorkerState* ws : workers) total += ws->nbytes;
  const std::int64_t mean = total / static_cast<std::int64_t>(workers.size());
  std::unordered_set<const TaskState*> wanted;
  for (const auto& key : keys)
    if (const TaskState* ts = find_task(key)) wanted.insert(ts);
  // How far each is from the mean as the plan goes: senders above, recipients below.
  std::unordered_map<const WorkerState*, std::int64_t> bytes;
  for (const WorkerState* ws : workers) bytes[ws] = ws->nbytes;
  std::map<WorkerState*, AcquireReplicas, ByAddress> asks;
  std::size_t planned = 0;
  for (WorkerState* from : workers) {
    if (bytes[from] <= mean) continue;
    std::vector<TaskState*> held(from->has_what.begin(), from->has_what.end());
    std::sort(held.begin(), held.end(), [this](const TaskState* a, const TaskState* b) {
      return size_of(a) != size_of(b) ? size_of(a) > size_of(b) : a->key < b->key;
    });
    for (TaskState* ts : held) {
      const std::int64_t size = size_of(ts);
      if (bytes[from] - mean < size || size <= 0) continue;
      if ((!keys.empty() && !wanted.count(ts)) || ts->state != S::memory ||
          rebalance_moves_.count(ts->key) || replicating_.count(ts) || needed_on(ts, from))
        continue;
      WorkerState* to = nullptr;  // the one furthest below the mean that lacks it
      for (WorkerState* ws : workers)
        if (mean - bytes[ws] >= size && !holds(ts, ws) &&
            (!to || bytes[ws] < bytes[to]))
          to = ws;
      if (!to) continue;
      bytes[from] -= size;
      bytes[to] += size;
      rebalance_moves_.emplace(ts->key, RebalanceMove{from->address, to->address, request,
                                                      last_heartbeat_check_});
      auto& ask = asks[to];
      ask.worker = to->address;
      ask.stimulus_id = stimulus_id_;
      ask.keys.push_back(DependencyLocation{ts->key, {from->address}, size});
      ++planned;
    }
  }
  for (auto& [to, ask] : asks) emit_to_worker(to, std::move(ask));
  return planned;
}

void SchedulerState::rebalance_confirmed(TaskState* ts, WorkerState* to) {
  auto it = rebalance_moves_.find(ts->key);
  if (it == rebalance_moves_.end() || it->second.to != to->address) return;
  RebalanceRequest& request = rebalance_requests_.at(it->second.request);
  WorkerState* from = find_worker(it->second.from);
  if (from && holds(ts, from) && !needed_on(ts, from)) {
    remove_replica(ts, from);
    free_keys(from, ts->key);
  }
  ++request.answer.moved;
  request.answer.moved_bytes += size_of(ts);
  --request.pending;
  rebalance_moves_.erase(it);
}

void SchedulerState::settle_rebalance(double now) {
  for (auto it = rebalance_moves_.begin(); it != rebalance_moves_.end();) {
    const auto& [key, move] = *it;
    const TaskState* ts = find_task(key);
    const WorkerState* from = find_worker(move.from);
    const WorkerState* to = find_worker(move.to);
    std::string why;
    if (!ts || ts->state != S::memory) why = "released or lost meanwhile";
    else if (!to || to->retiring) why = fmt::format("worker {} left or retires", move.to);
    else if (!from || !holds(ts, from)) why = fmt::format("{} no longer holds it", move.from);
    else if (now >= 0 && move.asked_at >= 0 && now - move.asked_at > kReplicationPatience)
      why = fmt::format("{} did not confirm its copy in {} s", move.to, kReplicationPatience);
    if (why.empty()) {
      ++it;
      continue;
    }
    RebalanceRequest& request = rebalance_requests_.at(move.request);
    request.answer.failed.push_back(fmt::format("{}: {}", key, why));
    --request.pending;
    it = rebalance_moves_.erase(it);
  }
  for (auto it = rebalance_requests_.begin(); it != rebalance_requests_.end();) {
    if (it->second.pending > 0) {
      ++it;
      continue;
    }
    it->second.answer.stimulus_id = stimulus_id_;
    out_.push_back(std::move(it->second.answer));  // the server drops it if the client left
    it = rebalance_requests_.erase(it);
  }
}

std::string SchedulerState::validate_rebalance() const {
  std::map<std::size_t, std::size_t> pending;
  for (const auto& [key, move] : rebalance_moves_) {
    if (!rebalance_requests_.count(move.request))
      return fmt::format("rebalance move of '{}' belongs to no request", key);
    ++pending[move.request];
  }
  for (const auto& [serial, request] : rebalance_requests_)
    if (request.pending != pending[serial] || request.pending == 0)
      return fmt::format("rebalance request {} of {} counts {} pending moves, has {}",
                         request.request_id, request.client, request.pending, pending[serial]);
  return "";
}

}  // namespace taskwire::scheduler
