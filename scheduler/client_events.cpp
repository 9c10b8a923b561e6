// Client stimuli: graphs, releases, cancellation (after Dask's Scheduler.update_graph,
// client_releases_keys, stimulus_cancel).
#include <taskwire/scheduler/scheduler_state.hpp>

#include <algorithm>
#include <unordered_set>

namespace taskwire::scheduler {

namespace {
using S = TaskStatus;
}  // namespace

// update_graph's first pass: which of the event's specs become tasks, and why the others
// cannot. Depth-first from the wanted keys through the specs of keys not known yet (a known
// key is a leaf): finds the new tasks the wanted keys need, dependencies first, and the keys
// that can never run (an unknown dependency, a cycle, or such a key upstream).
class SchedulerState::GraphScan {
 public:
  GraphScan(const SchedulerState& state, const UpdateGraph& e) : state_(state) {
    batch_.reserve(e.tasks.size());
    for (const TaskSpec& t : e.tasks) batch_.emplace(t.key, &t);
    marks_.reserve(e.tasks.size() + e.wanted.size());
    for (const std::string& wanted : e.wanted) walk_from(wanted);
    keep_needed(e.wanted);
  }

  /// New specs that runnable wanted keys need, each after its dependencies.
  std::vector<const TaskSpec*> new_specs;
  /// Why each key that can never run cannot.
  std::unordered_map<std::string_view, std::string> why_bad;
  /// Set when new_specs would exceed max_tasks (new_specs is then emptied).
  std::string refused;

 private:
  enum class Mark : std::uint8_t { active, good, bad };
  struct Visit {
    const TaskSpec* spec;
    std::size_t next = 0;  ///< the next dependency to descend into
  };

  void walk_from(std::string_view wanted) {
    enter(wanted);
    while (!stack_.empty()) {
      const TaskSpec* spec = stack_.back().spec;
      if (stack_.back().next < spec->dependencies.size()) {
        const std::string& dep = spec->dependencies[stack_.back().next++];
        if (enter(dep)) continue;
        const Mark m = marks_.at(dep);
        if (m == Mark::active)
          mark_bad(spec->key, fmt::format("dependency cycle through '{}'", dep));
        if (m == Mark::bad) mark_bad(spec->key, why_bad.at(dep));
        continue;
      }
      stack_.pop_back();
      Mark& m = marks_.at(spec->key);
      if (m == Mark::active) {
        m = Mark::good;
        new_specs.push_back(spec);
      } else if (!stack_.empty()) {  // bad: so is whatever needs it
        mark_bad(stack_.back().spec->key, why_bad.at(spec->key));
      }
    }
  }

  /// Marks `key` on first sight; false when there is nothing to descend into.
  bool enter(std::string_view key) {
    if (marks_.count(key)) return false;
    if (state_.find_task(key)) {
      marks_.emplace(key, Mark::good);
      return false;
    }
    auto it = batch_.find(key);
    if (it == batch_.end()) {
      marks_.emplace(key, Mark::bad);
      why_bad.emplace(key, fmt::format("unknown key '{}'", key));
      return false;
    }
    marks_.emplace(key, Mark::active);
    stack_.push_back(Visit{it->second});
    return true;
  }

  void mark_bad(std::string_view key, const std::string& why) {
    marks_[key] = Mark::bad;
    why_bad.try_emplace(key, why);
  }

  // Culls new_specs to what runnable wanted keys need: a bad key's good inputs are dropped.
  void keep_needed(const std::vector<std::string>& wanted) {
    std::unordered_set<std::string_view> needed;
    needed.reserve(new_specs.size());
    std::vector<std::string_view> todo;
    for (const std::string& key : wanted) {
      if (marks_.at(key) == Mark::good && !state_.find_task(key)) todo.push_back(key);
    }
    while (!todo.empty()) {
      const std::string_view key = todo.back();
      todo.pop_back();
      if (!needed.insert(key).second) continue;
      for (const std::string& dep : batch_.at(key)->dependencies) {
        if (!needed.count(dep) && !state_.find_task(dep)) todo.push_back(dep);
      }
    }
    std::erase_if(new_specs, [&](const TaskSpec* spec) { return !needed.count(spec->key); });
  }

  const SchedulerState& state_;
  std::unordered_map<std::string_view, const TaskSpec*> batch_;  ///< the event's specs by key
  std::unordered_map<std::string_view, Mark> marks_;
  std::vector<Visit> stack_;
};

void SchedulerState::on(const UpdateGraph& e) {
  ClientState* cs = ensure_client(e.client);
  ++generation_;
  GraphScan scan(*this, e);
  refuse_over_limit(scan);
  std::vector<TaskState*> to_wait = add_tasks(scan.new_specs);
  add_wants(e, cs, scan, to_wait);
  place_scattered(e, to_wait);
  std::sort(to_wait.begin(), to_wait.end(),
            [](const TaskState* a, const TaskState* b) { return ByPriority{}(b, a); });
  for (TaskState* ts : to_wait) recommend(ts, S::waiting);
  drop_unused_specs(e);
}

// Data a client scattered straight to workers: a new key is in memory there at once (as if
// its task had run on the first of them and been replicated to the others), and does not
// wait; a key in memory already gains the holders as replicas. Holders that left before this
// arrived are skipped: a key left with none waits and runs its task (which says the data
// was lost), and a copy the scheduler does not count is freed where it is. A scattered key
// is a new attempt of its task.
void SchedulerState::place_scattered(const UpdateGraph& e, std::vector<TaskState*>& to_wait) {
  if (e.scattered.empty()) return;
  const std::unordered_set<const TaskState*> waiting(to_wait.begin(), to_wait.end());
  std::unordered_set<const TaskState*> placed;
  for (const ScatteredKey& s : e.scattered) {
    TaskState* ts = find_task(s.key);
    std::vector<WorkerState*> holders;
    for (const std::string& address : s.workers)
      if (WorkerState* ws = find_worker(address)) holders.push_back(ws);
    const bool fresh = ts && waiting.count(ts) && !placed.count(ts) &&
                       ts->state == S::released && ts->dependencies.empty();
    if (!ts || (!fresh && ts->state != S::memory)) {
      for (WorkerState* ws : holders) free_keys(ws, s.key);
      continue;
    }
    if (holders.empty()) continue;
    if (fresh) {
      placed.insert(ts);
      // Other bytes than any run before: what was kept by attempt (small results) is not these.
      ts->attempt = ++attempts_;
      ts->nbytes = s.nbytes;
      add_to_memory(ts, holders.front());  // reports it to the clients that want it
      log_transition(ts, S::released);
    }
    for (WorkerState* ws : holders) add_replica(ts, ws);
  }
  std::erase_if(to_wait, [&](const TaskState* ts) { return placed.count(ts) != 0; });
}

void SchedulerState::refuse_over_limit(GraphScan& scan) {
  if (tasks_.size() + scan.new_specs.size() <= options_.max_tasks) return;
  scan.refused = fmt::format(
      "graph refused: the scheduler would hold {} tasks, more than its limit of {}",
      tasks_.size() + scan.new_specs.size(), options_.max_tasks);
  log(LogLevel::error, scan.refused);
  scan.new_specs.clear();
}

std::vector<TaskState*> SchedulerState::add_tasks(const std::vector<const TaskSpec*>& specs) {
  std::vector<TaskState*> added;
  added.reserve(specs.size());
  for (const TaskSpec* spec : specs) {
    auto owned = std::make_unique<TaskState>();
    TaskState* ts = owned.get();
    ts->key = spec->key;
    ts->function = intern_function(spec->function);
    ts->spec = spec->spec;
    ts->priority = Priority{spec->user_priority, generation_, spec->priority};
    ts->retries = std::max(0, spec->retries);
    set_restrictions(ts, *spec);
    ts->dependencies.reserve(spec->dependencies.size());
    for (const std::string& dep_key : spec->dependencies) {
      TaskState* dep = find_task(dep_key);  // created earlier: dependencies come first
      if (dep->dependents.insert(ts)) ts->dependencies.push_back(dep);
    }
    tasks_.emplace(ts->key, std::move(owned));
    ++counts_.by_state[static_cast<std::size_t>(TaskStatus::released)];
    ++metrics_of(ts).tasks.by_state[static_cast<std::size_t>(TaskStatus::released)];
    added.push_back(ts);
  }
  return added;
}

void SchedulerState::add_wants(const UpdateGraph& e, ClientState* cs, const GraphScan& scan,
                               std::vector<TaskState*>& to_wait) {
  std::unordered_set<std::string_view> seen;
  seen.reserve(e.wanted.size());
  for (const std::string& key : e.wanted) {
    if (!seen.insert(key).second) continue;
    TaskState* ts = find_task(key);
    const auto bad = scan.why_bad.find(key);
    if (!ts && bad == scan.why_bad.end()) {  // runnable, but the graph was refused
      out_.push_back(
          ReportTaskErred{cs->id, key, key, scan.refused, scan.refused, "", "", "", stimulus_id_});
      continue;
    }
    if (!ts) {
      out_.push_back(ReportCancelled{
          cs->id, {key}, fmt::format("lost dependencies: {}", bad->second), stimulus_id_});
      continue;
    }
    add_want(ts, cs);
    if (ts->state == S::memory || ts->state == S::erred) {
      report_state(ts, cs);
    } else if (ts->state == S::released && ts->priority.generation != generation_) {
      to_wait.push_back(ts);  // known, released earlier, wanted again
    }
  }
}

void SchedulerState::drop_unused_specs(const UpdateGraph& e) {
  for (const TaskSpec& t : e.tasks) {
    const TaskState* ts = find_task(t.key);
    if (!ts || ts->spec != t.spec) out_.push_back(DropTaskSpec{t.key, t.spec, stimulus_id_});
  }
}

void SchedulerState::drop_spec(TaskState* ts) {
  if (!ts->spec_held) return;
  ts->spec_held = false;
  out_.push_back(DropTaskSpec{ts->key, ts->spec, stimulus_id_});
}

void SchedulerState::on(const ClientReleasesKeys& e) {
  ClientState* cs = find_client(e.client);
  if (!cs) return log(LogLevel::debug, fmt::format("release from unknown client {}", e.client));
  std::vector<TaskState*> tasks;
  for (const std::string& key : e.keys) {
    if (TaskState* ts = find_task(key)) tasks.push_back(ts);
  }
  client_releases(cs, tasks);
}

void SchedulerState::client_releases(ClientState* cs, const std::vector<TaskState*>& tasks) {
  for (TaskState* ts : tasks) {
    if (!cs->wants_what.count(ts)) continue;
    drop_want(ts, cs);
    if (!ts->who_wants.empty()) continue;
    if (ts->dependents.empty()) {
      recommend(ts, S::forgotten);
    } else if (ts->state != S::erred && ts->waiters.empty()) {
      recommend(ts, S::released);
    }
  }
}

void SchedulerState::on(const CancelKeys& e) {
  ClientState* cs = find_client(e.client);
  if (!cs) return log(LogLevel::debug, fmt::format("cancel from unknown client {}", e.client));
  auto others_want = [&](const TaskState* ts) {
    return std::any_of(ts->who_wants.begin(), ts->who_wants.end(),
                       [&](const ClientState* c) { return c != cs; });
  };
  // The keys and everything downstream of them (without force, only what no other client
  // wants: those keep running and merely lose this client's interest).
  std::vector<TaskState*> stack;
  std::vector<std::string> named;
  for (const std::string& key : e.keys) {
    TaskState* ts = find_task(key);
    if (!ts) continue;
    named.push_back(key);
    if (e.force || !others_want(ts)) stack.push_back(ts);
  }
  std::unordered_set<TaskState*> seen;
  std::vector<TaskState*> cancelled;
  while (!stack.empty()) {
    TaskState* ts = stack.back();
    stack.pop_back();
    if (!seen.insert(ts).second) continue;
    cancelled.push_back(ts);
    for (TaskState* d : ts->dependents) {
      if (e.force || !others_want(d)) stack.push_back(d);
    }
  }
  std::sort(cancelled.begin(), cancelled.end(), ByPriority{});

  std::map<std::string, std::vector<std::string>> told;  // client -> keys, sorted by client
  told[cs->id] = named;
  for (TaskState* ts : cancelled) {
    const std::vector<ClientState*> clients = ts->who_wants;
    for (ClientState* c : clients) {
      if (!e.force && c != cs) continue;
      auto& keys = told[c->id];
      if (std::find(keys.begin(), keys.end(), ts->key) == keys.end()) keys.push_back(ts->key);
      drop_want(ts, c);
    }
  }
  for (TaskState* ts : cancelled) {
    if (!ts->who_wants.empty()) continue;
    if (ts->dependents.empty()) {
      recommend(ts, S::forgotten);
    } else if (ts->state != S::erred && ts->waiters.empty()) {
      recommend(ts, S::released);
    }
  }
  // Keys named here that other clients want: this client just stops wanting them.
  std::vector<TaskState*> shared;
  for (const std::string& key : named) {
    if (TaskState* ts = find_task(key); ts && !seen.count(ts)) shared.push_back(ts);
  }
  client_releases(cs, shared);

  const std::string reason = fmt::format("cancelled by client {}", cs->id);
  for (auto& [client, keys] : told) {
    if (!keys.empty())
      out_.push_back(ReportCancelled{client, std::move(keys), reason, stimulus_id_});
  }
}

void SchedulerState::on(const RemoveClient& e) {
  // Its retirements go on (the workers are leaving already); nobody waits for the answer.
  std::erase_if(retire_requests_, [&](const RetireRequest& r) { return r.client == e.client; });
  ClientState* cs = find_client(e.client);
  if (!cs) return;
  client_releases(cs, by_priority(cs->wants_what));
  clients_.erase(e.client);  // nothing refers to it once its wants are dropped
}

void SchedulerState::add_want(TaskState* ts, ClientState* cs) {
  if (cs->wants_what.insert(ts)) ts->who_wants.push_back(cs);
}

void SchedulerState::drop_want(TaskState* ts, ClientState* cs) {
  if (!cs->wants_what.erase(ts)) return;
  ts->who_wants.erase(std::find(ts->who_wants.begin(), ts->who_wants.end(), cs));
}

void SchedulerState::report_state(TaskState* ts, ClientState* cs) {
  if (ts->state == S::memory) {
    out_.push_back(ReportKeyInMemory{cs->id, ts->key, size_of(ts), stimulus_id_});
  } else if (ts->state == S::erred) {
    report_failure(ts, cs);
  }
}

void SchedulerState::report_failure(TaskState* ts, ClientState* cs) {
  static const TaskFailure unknown{"", "unknown error"};
  const TaskFailure& f = ts->failure ? *ts->failure : unknown;
  const bool own = f.blamed_key == ts->key || f.blamed_key.empty();
  out_.push_back(ReportTaskErred{
      cs->id, ts->key, own ? ts->key : f.blamed_key,
      own ? f.message : fmt::format("dependency '{}' failed: {}", f.blamed_key, f.message),
      f.message, f.exception_type, f.worker_name, f.worker_address, stimulus_id_});
}

}  // namespace taskwire::scheduler
