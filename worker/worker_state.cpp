// The worker state machine: event handlers and the transitions they share.
#include <taskwire/worker/worker_state.hpp>

#include <taskwire/runtime/function_registry.hpp>

#include <taskwire/runtime/stimulus_id.hpp>

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

namespace taskwire::worker {
namespace {

template <class T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The task's dependencies, each once: the declared ones, then any other key an argument names.
// A task over thousands of results (a reduce over a whole map) must not compare every key with
// every other: a linear search made a 10 000-dependency task cost 10^8 string compares (a third
// of a worker's time in graph_program bench with ReduceMode::single_node).
std::vector<Key> dependencies_of(const protocol::TaskSpec& spec) {
  std::vector<Key> deps = spec.dependencies;
  const bool hashed = deps.size() + spec.args.size() > 16;  // small: a search, no allocation
  std::unordered_set<std::string_view> seen;
  if (hashed) seen.insert(spec.dependencies.begin(), spec.dependencies.end());
  for (const auto& a : spec.args)
    if (a.kind == protocol::ArgSpec::dependency &&
        (hashed ? seen.insert(a.key).second : !contains(deps, a.key)))
      deps.push_back(a.key);
  return deps;
}

}  // namespace

std::string_view to_string(TaskStatus s) noexcept {
  switch (s) {
    case TaskStatus::waiting: return "waiting";
    case TaskStatus::fetch: return "fetch";
    case TaskStatus::flight: return "flight";
    case TaskStatus::ready: return "ready";
    case TaskStatus::executing: return "executing";
    case TaskStatus::cancelled: return "cancelled";
    case TaskStatus::memory: return "memory";
    case TaskStatus::error: return "error";
  }
  return "?";
}

std::string unknown_function_message(const std::string& function, const std::string& worker_name,
                                     const std::string& worker_address) {
  return fmt::format(
      "function '{}' is not registered on worker '{}' ({}): register it with "
      "TASKWIRE_REGISTER({}) in code the worker links, or load the library that does with "
      "taskwire-worker --preload lib.so",
      function, worker_name, worker_address, function);
}

WorkerState::WorkerState(WorkerStateOptions options, std::shared_ptr<DataStore> data)
    : options_(std::move(options)),
      data_(data ? std::move(data) : std::make_shared<DataStore>()) {
  if (options_.nthreads == 0) options_.nthreads = 1;
  if (options_.max_gather_peers == 0) options_.max_gather_peers = 1;
  if (options_.max_keys_per_gather == 0) options_.max_keys_per_gather = 1;
  if (!options_.function_known)
    options_.function_known = [](const std::string& name) {
      return runtime::FunctionRegistry::global().find(name) != nullptr;
    };
  // A store that holds results already is a worker's joining again (Worker::keep_data): each
  // is a result the scheduler may count as ours (AddWorker::held), kept until freed.
  for (const auto& key : data_->keys()) {
    TaskState& ts = tasks_[key];
    ts.key = key;
    ts.status = TaskStatus::memory;
    ts.assigned = true;
    ts.nbytes = data_->nbytes(key);
  }
}

Instructions WorkerState::handle(Event event) {
  std::vector<Event> events;
  events.push_back(std::move(event));
  return handle(std::move(events));
}

Instructions WorkerState::handle(std::vector<Event> events) {
  out_.clear();
  for (auto& event : events) {
    std::visit(
        [this](auto& e) {
          runtime::set_stimulus_id(stimulus_, e.stimulus_id, e.kind, stimulus_counter_);
          apply(e);
        },
        event);
  }
  ensure_communicating();
  ensure_computing();
  return std::move(out_);
}

std::optional<TaskStatus> WorkerState::status(const Key& key) const {
  auto it = tasks_.find(key);
  if (it == tasks_.end()) return std::nullopt;
  return it->second.status;
}

const TaskState* WorkerState::task(const Key& key) const {
  auto it = tasks_.find(key);
  return it == tasks_.end() ? nullptr : &it->second;
}

std::vector<std::string> WorkerState::in_flight_workers() const {
  std::vector<std::string> out;
  for (const auto& [w, keys] : in_flight_) out.push_back(w);
  return out;
}

TaskState* WorkerState::find(const Key& key) {
  auto it = tasks_.find(key);
  return it == tasks_.end() ? nullptr : &it->second;
}

void WorkerState::emit(Instruction i) { out_.push_back(std::move(i)); }

// ---- compute-task ----

std::optional<std::string> WorkerState::invalid_spec(const ComputeTaskEvent& e,
                                                     const std::vector<Key>& deps) const {
  const auto& spec = e.spec;
  if (!options_.function_known(spec.function))
    return unknown_function_message(spec.function, options_.name, options_.address);
  // The scheduler sends a task only where the resources exist; an old or foreign scheduler
  // might not, and such a task would wait here for ever.
  if (!runtime::resources_fit(spec.resources, options_.resources))
    return fmt::format("task '{}' needs resources {}, more than worker '{}' ({}) offers: {}",
                       spec.key, runtime::format_resources(spec.resources), options_.name,
                       options_.address, runtime::format_resources(options_.resources));
  for (std::size_t i = 0; i < spec.args.size(); ++i) {
    const auto& a = spec.args[i];
    if (a.kind == protocol::ArgSpec::frame && a.frame_index >= e.frames.size())
      return fmt::format("malformed task '{}': argument {} refers to payload frame {} but the "
                         "message carried {}",
                         spec.key, i, a.frame_index, e.frames.size());
    if (a.kind != protocol::ArgSpec::frame && a.kind != protocol::ArgSpec::dependency)
      return fmt::format("malformed task '{}': argument {} has unknown kind {}", spec.key, i,
                         static_cast<int>(a.kind));
  }
  if (contains(deps, spec.key))
    return fmt::format("malformed task '{}': it depends on itself", spec.key);
  return std::nullopt;
}

void WorkerState::apply(ComputeTaskEvent& e) {
  const Key key = e.spec.key;
  if (key.empty()) return;  // nothing to report it against
  TaskState* existing = find(key);
  if (existing) existing->attempt = e.attempt;
  if (existing && reassigned(*existing, e)) return;

  std::vector<Key> deps = dependencies_of(e.spec);
  if (auto problem = invalid_spec(e, deps)) {
    TaskState& ts = existing ? *existing : tasks_[key];
    ts.key = key;
    ts.attempt = e.attempt;
    dequeue(ts);
    ts.assigned = true;
    fail_task(ts, std::move(*problem));
    return;
  }
  auto holders = dependency_holders(e, deps);
  if (!holders) return;

  TaskState& ts = existing ? *existing : tasks_[key];
  dequeue(ts);
  ts.key = key;
  ts.attempt = e.attempt;
  ts.status = TaskStatus::waiting;
  ts.assigned = true;
  ts.replica = false;
  ts.function = std::move(e.spec.function);
  ts.args = std::move(e.spec.args);
  ts.frames = std::move(e.frames);
  ts.priority = RunOrder{e.spec.user_priority, e.spec.priority};
  ts.resources = std::move(e.spec.resources);
  ts.seq = next_seq_++;
  ts.who_has.clear();
  ts.error.clear();
  ts.error_type.clear();
  ts.resume.reset();
  hold_given(e, deps);
  for (const auto& d : deps) add_dependency(ts, d, (*holders)[d], contains(e.awaited, d));
  if (ts.waiting_for_data.empty()) make_ready(ts);
}

// Dependencies the scheduler sent along with the task (small results it had just received):
// held here as a fetched replica would be, unless held, in flight or computed here already,
// or asked of this worker for itself (a copy for a retirement: fetched and confirmed as
// usual). A key that is not a dependency of the task is ignored.
void WorkerState::hold_given(ComputeTaskEvent& e, const std::vector<Key>& deps) {
  for (auto& [key, frame] : e.given) {
    if (std::find(deps.begin(), deps.end(), key) == deps.end()) continue;
    TaskState* ds = find(key);
    if (ds && (ds->status != TaskStatus::fetch || ds->assigned)) continue;
    if (!ds) {
      ds = &tasks_[key];
      ds->key = key;
    }
    dequeue(*ds);
    transition_to_memory(*ds, Value(std::move(frame)), false);
  }
}

// A value held here whose spill file was found lost, about to be computed here again: local
// tasks not started wait for it again; one already running took the value before.
void WorkerState::forget_lost_value(TaskState& ts) {
  data_->erase(ts.key);
  std::erase_if(ts.dependents, [&](const Key& d) {
    TaskState* dt = find(d);
    if (!dt) return true;
    if (dt->status != TaskStatus::waiting && dt->status != TaskStatus::ready) {
      dt->dependencies.erase(ts.key);
      return true;
    }
    dequeue(*dt);
    dt->status = TaskStatus::waiting;
    dt->waiting_for_data.insert(ts.key);
    return false;
  });
}

bool WorkerState::reassigned(TaskState& existing, ComputeTaskEvent& e) {
  switch (existing.status) {
    case TaskStatus::memory:
      // Its spill file was found lost (a peer or client asked for it): computed again here,
      // not reported from a store that no longer has it (which the scheduler would hear as
      // held, and every fetch would find missing, round after round).
      if (data_->lost(existing.key)) {
        forget_lost_value(existing);
        return false;
      }
      // Already here (computed before, or fetched for a local dependent): report it.
      existing.assigned = true;
      emit(SendTaskFinished{existing.key, existing.nbytes, existing.duration_s, stimulus_,
                            existing.run, existing.attempt});
      return true;
    case TaskStatus::waiting:
    case TaskStatus::ready:
    case TaskStatus::executing:
      existing.assigned = true;
      return true;
    case TaskStatus::cancelled:
      existing.assigned = true;
      existing.status = TaskStatus::executing;
      --cancelled_count_;
      return true;
    case TaskStatus::flight:
      // Let the transfer finish; compute it here only if the transfer fails.
      existing.assigned = true;
      existing.replica = false;  // reported as this task's result
      existing.resume = std::make_shared<ComputeTaskEvent>(std::move(e));
      return true;
    case TaskStatus::fetch:
    case TaskStatus::error:
      break;  // computed here from scratch
  }
  return false;
}

std::optional<std::map<Key, std::vector<std::string>>> WorkerState::dependency_holders(
    const ComputeTaskEvent& e, const std::vector<Key>& deps) {
  // A dependency with no holder but us (and not here) cannot be had: the scheduler must
  // place the task again.
  std::map<Key, std::vector<std::string>> holders;
  for (const auto& d : deps) {
    const TaskState* ds = find(d);
    std::vector<std::string> from;
    if (auto it = e.who_has.find(d); it != e.who_has.end())
      for (const auto& w : it->second)
        if (w != options_.address && !contains(from, w)) from.push_back(w);
    const bool needs_holder = !ds || ds->status == TaskStatus::error;
    if (needs_holder && from.empty()) {
      // Leave an existing record (a dependency others wait for) as it was.
      emit(SendMissingData{e.spec.key, d, "", stimulus_});
      return std::nullopt;
    }
    holders.emplace(d, std::move(from));
  }
  return holders;
}

void WorkerState::add_dependency(TaskState& ts, const Key& d,
                                 const std::vector<std::string>& holders, bool awaited) {
  auto [it, created] = tasks_.try_emplace(d);
  TaskState& ds = it->second;
  ts.dependencies.insert(d);
  ds.dependents.insert(ts.key);
  if (created || ds.status == TaskStatus::error) {
    ds.key = d;
    ds.status = TaskStatus::fetch;
    ds.error.clear();
    ds.error_type.clear();
    ds.who_has = holders;
    ds.awaited = awaited;
    ds.priority = ts.priority;
    ds.seq = next_seq_++;
    enqueue_fetch(ds);
  } else if (ds.status == TaskStatus::cancelled) {
    ds.status = TaskStatus::executing;  // its result is wanted again, by `ts`
    --cancelled_count_;
  } else if (ds.status == TaskStatus::fetch || ds.status == TaskStatus::flight) {
    for (const auto& w : holders)
      if (!contains(ds.who_has, w)) ds.who_has.push_back(w);
    // A waiting request is answered at once by a holder, so once a holder may still be
    // computing it, every request waits.
    if (ds.status == TaskStatus::fetch && (ts.priority < ds.priority || awaited > ds.awaited)) {
      dequeue(ds);
      ds.priority = std::min(ds.priority, ts.priority);
      ds.awaited = ds.awaited || awaited;
      enqueue_fetch(ds);
    } else if (ds.status == TaskStatus::flight) {
      ds.awaited = ds.awaited || awaited;  // if this transfer fails, the next one waits
    }
  }
  if (ds.status != TaskStatus::memory) ts.waiting_for_data.insert(d);
}

// ---- free-keys ----

void WorkerState::apply(FreeKeysEvent& e) {
  for (const auto& key : e.keys) {
    TaskState* ts = find(key);
    if (!ts) continue;
    ts->assigned = false;
    ts->replica = false;
    ts->resume.reset();
    maybe_release(key);
  }
}

// ---- queues ----

void WorkerState::make_ready(TaskState& ts) {
  ts.status = TaskStatus::ready;
  ready_.emplace(ts.priority, ts.seq, ts.key);
}

void WorkerState::enqueue_fetch(TaskState& ts) {
  fetch_queue_.emplace(ts.priority, ts.seq, ts.key);
  awaited_queued_ += ts.awaited;
}

void WorkerState::dequeue(TaskState& ts) {
  if (ts.status == TaskStatus::ready) ready_.erase({ts.priority, ts.seq, ts.key});
  if (ts.status == TaskStatus::fetch && fetch_queue_.erase({ts.priority, ts.seq, ts.key}))
    awaited_queued_ -= ts.awaited;
}

// Plans transfers for queued dependencies, most urgent first: one GatherDep per peer not
// already busy, several keys per peer (batched), at most max_gather_peers peers at once.
void WorkerState::ensure_communicating() {
  if (paused_ || fetch_queue_.empty()) return;
  std::map<std::string, std::vector<Key>> plan;
  std::vector<QueueEntry> planned;
  for (auto it = fetch_queue_.begin(); awaited_queued_ > 0 && it != fetch_queue_.end();) {
    TaskState& awaited = tasks_.at(std::get<2>(*it));
    if (awaited.awaited && ask_awaited(awaited)) {
      it = fetch_queue_.erase(it);
      --awaited_queued_;
      continue;
    }
    if (awaiting_.size() >= kMaxAwaiting) break;
    ++it;
  }
  if (in_flight_.size() >= options_.max_gather_peers) return;
  for (const auto& entry : fetch_queue_) {
    const Key& key = std::get<2>(entry);
    const TaskState& ts = tasks_.at(key);
    if (ts.awaited) continue;
    const std::string* chosen = nullptr;
    for (const auto& w : ts.who_has) {
      if (in_flight_.count(w)) continue;
      auto p = plan.find(w);
      if (p != plan.end()) {
        if (p->second.size() < options_.max_keys_per_gather) {
          chosen = &w;
          break;
        }
        continue;
      }
      if (!chosen && in_flight_.size() + plan.size() < options_.max_gather_peers) chosen = &w;
    }
    if (!chosen) continue;
    plan[*chosen].push_back(key);
    planned.push_back(entry);
  }
  for (const auto& entry : planned) fetch_queue_.erase(entry);
  for (auto& [worker, keys] : plan) {
    for (const auto& key : keys) {
      TaskState& ts = tasks_.at(key);
      ts.status = TaskStatus::flight;
      ts.coming_from = worker;
    }
    in_flight_[worker] = keys;
    emit(GatherDep{worker, std::move(keys), stimulus_});
  }
}

// An input still running on a peer is asked of it on its own, to be answered when it is
// done: requests to one peer are answered in order of their keys' completion, not of asking,
// so they share no GatherDep. At most kMaxAwaiting at once (each is a request parked at a
// peer); the rest wait in the fetch queue. The caller takes it off the queue.
bool WorkerState::ask_awaited(TaskState& ts) {
  if (awaiting_.size() >= kMaxAwaiting) return false;
  ts.status = TaskStatus::flight;
  ts.coming_from = ts.who_has.front();
  awaiting_.emplace(ts.key, ts.coming_from);
  emit(GatherDep{ts.coming_from, {ts.key}, stimulus_, true});
  return true;
}

// Ready tasks in priority order; one whose resources are not free now waits, and the next
// ones that fit run around it (it starts once a running task gives them back).
void WorkerState::ensure_computing() {
  if (paused_) return;
  for (auto it = ready_.begin(); executing_count_ < options_.nthreads && it != ready_.end();) {
    TaskState& ts = tasks_.at(std::get<2>(*it));
    if (!ts.resources.empty() &&
        !runtime::resources_fit(ts.resources, options_.resources, used_resources_)) {
      ++it;
      continue;
    }
    // Starting a task may fail it, which touches other records: find the next entry anew.
    const std::optional<QueueEntry> next =
        std::next(it) == ready_.end() ? std::nullopt : std::optional(*std::next(it));
    ready_.erase(it);
    start_executing(ts);
    it = next ? ready_.lower_bound(*next) : ready_.end();
  }
}

void WorkerState::start_executing(TaskState& ts) {
  const Key key = ts.key;
  std::vector<Value> args;
  args.reserve(ts.args.size());
  std::optional<Key> lost;
  for (const auto& a : ts.args) {
    if (a.kind == protocol::ArgSpec::frame) {
      args.push_back(ts.frames[a.frame_index]);
    } else if (auto f = data_->value(a.key)) {
      args.push_back(std::move(*f));
    } else {
      lost = a.key;
      break;
    }
  }
  if (lost) return lost_own_data(*lost);
  ts.status = TaskStatus::executing;
  ++executing_count_;
  runtime::account_resources(used_resources_, ts.resources, 1);
  emit(Execute{key, ts.function, std::move(args), ts.priority, stimulus_, transfers_into(ts)});
}

// The span and bytes of the transfers that brought ts's dependencies here, for the task
// streams (Dask's "transfer" start-stops of a task).
TaskRun WorkerState::transfers_into(const TaskState& ts) const {
  TaskRun run;
  bool any = false;
  for (const auto& d : ts.dependencies) {
    const auto it = tasks_.find(d);
    if (it == tasks_.end() || !it->second.fetched) continue;
    const TaskRun& t = it->second.run;
    run.transfer_start = any ? std::min(run.transfer_start, t.transfer_start) : t.transfer_start;
    run.transfer_stop = any ? std::max(run.transfer_stop, t.transfer_stop) : t.transfer_stop;
    run.transfer_bytes += t.transfer_bytes;
    any = true;
  }
  return run;
}

// ---- invariants ----

void WorkerState::validate_resources() const {
  runtime::Resources used;
  for (const auto& [key, ts] : tasks_)
    if (ts.status == TaskStatus::executing || ts.status == TaskStatus::cancelled)
      runtime::account_resources(used, ts.resources, 1);
  if (!runtime::resources_fit(used, used_resources_) ||
      !runtime::resources_fit(used_resources_, used))
    throw std::logic_error(fmt::format("WorkerState: tasks on threads hold resources {}, "
                                       "counted {}",
                                       runtime::format_resources(used),
                                       runtime::format_resources(used_resources_)));
  if (!runtime::resources_fit(used_resources_, options_.resources))
    throw std::logic_error(fmt::format("WorkerState: resources in use {} exceed those offered {}",
                                       runtime::format_resources(used_resources_),
                                       runtime::format_resources(options_.resources)));
}

void WorkerState::validate() const {
  auto fail = [](const std::string& what) { throw std::logic_error("WorkerState: " + what); };
  std::size_t on_threads = 0, cancelled = 0;
  for (const auto& [key, ts] : tasks_) {
    if (ts.key != key) fail(fmt::format("record '{}' is filed under '{}'", ts.key, key));
    const QueueEntry entry{ts.priority, ts.seq, key};
    if ((ts.status == TaskStatus::ready) != (ready_.count(entry) == 1))
      fail(fmt::format("'{}' is {} but {}in the ready queue", key, ts.status,
                       ready_.count(entry) ? "" : "not "));
    if ((ts.status == TaskStatus::fetch) != (fetch_queue_.count(entry) == 1))
      fail(fmt::format("'{}' is {} but {}in the fetch queue", key, ts.status,
                       fetch_queue_.count(entry) ? "" : "not "));
    if ((ts.status == TaskStatus::memory) != data_->contains(key))
      fail(fmt::format("'{}' is {} but its data is {}held", key, ts.status,
                       data_->contains(key) ? "" : "not "));
    if (ts.status == TaskStatus::executing || ts.status == TaskStatus::cancelled) ++on_threads;
    if (ts.status == TaskStatus::cancelled) ++cancelled;
    if (ts.status == TaskStatus::fetch && ts.who_has.empty())
      fail(fmt::format("'{}' is to be fetched from nobody", key));
    if (ts.status == TaskStatus::flight) {
      auto it = in_flight_.find(ts.coming_from);
      auto awaiting = awaiting_.find(key);
      const bool asked = it != in_flight_.end() && contains(it->second, key);
      const bool awaits = awaiting != awaiting_.end() && awaiting->second == ts.coming_from;
      if (asked == awaits)
        fail(fmt::format("'{}' is in flight from {}, which has {} GatherDep for it", key,
                         ts.coming_from, asked ? "two kinds of" : "no"));
    }
    if (!ts.assigned && ts.dependents.empty() && ts.status != TaskStatus::flight &&
        ts.status != TaskStatus::cancelled)
      fail(fmt::format("'{}' ({}) is needed by nobody but was kept", key, ts.status));
    for (const auto& d : ts.waiting_for_data)
      if (!ts.dependencies.count(d))
        fail(fmt::format("'{}' waits for '{}', not one of its dependencies", key, d));
    if (ts.status == TaskStatus::waiting && ts.waiting_for_data.empty())
      fail(fmt::format("'{}' is waiting for nothing", key));
    for (const auto& d : ts.dependencies) {
      auto it = tasks_.find(d);
      if (it == tasks_.end()) fail(fmt::format("'{}' depends on unknown '{}'", key, d));
      if (!it->second.dependents.count(key))
        fail(fmt::format("'{}' depends on '{}', which does not list it", key, d));
      if ((it->second.status == TaskStatus::memory) == (ts.waiting_for_data.count(d) == 1))
        fail(fmt::format("'{}' {}waits for '{}', which is {}", key,
                         ts.waiting_for_data.count(d) ? "" : "does not ", d, it->second.status));
    }
    for (const auto& d : ts.dependents) {
      auto it = tasks_.find(d);
      if (it == tasks_.end() || !it->second.dependencies.count(key))
        fail(fmt::format("'{}' lists dependent '{}', which does not depend on it", key, d));
    }
  }
  validate_resources();
  if (cancelled != cancelled_count_)
    fail(fmt::format("{} tasks cancelled on threads but cancelled_count is {}", cancelled,
                     cancelled_count_));
  if (on_threads != executing_count_)
    fail(fmt::format("{} tasks on threads but executing_count is {}", on_threads,
                     executing_count_));
  if (executing_count_ > options_.nthreads)
    fail(fmt::format("{} tasks on {} threads", executing_count_, options_.nthreads));
  for (const auto& [key, peer] : awaiting_) {
    auto it = tasks_.find(key);
    if (it == tasks_.end() || it->second.status != TaskStatus::flight ||
        it->second.coming_from != peer)
      fail(fmt::format("awaiting '{}' from {}, which is not in flight from there", key, peer));
  }
  const auto awaited_queued = std::count_if(tasks_.begin(), tasks_.end(), [](const auto& kv) {
    return kv.second.status == TaskStatus::fetch && kv.second.awaited;
  });
  if (static_cast<std::size_t>(awaited_queued) != awaited_queued_)
    fail(fmt::format("{} awaited keys to fetch, counted {}", awaited_queued, awaited_queued_));
  if (awaiting_.size() > kMaxAwaiting)
    fail(fmt::format("{} keys awaited at once, limit {}", awaiting_.size(), kMaxAwaiting));
  if (in_flight_.size() > options_.max_gather_peers)
    fail(fmt::format("{} peers in flight, limit {}", in_flight_.size(), options_.max_gather_peers));
  if (data_->size() != static_cast<std::size_t>(std::count_if(tasks_.begin(), tasks_.end(), [](const auto& kv) {
        return kv.second.status == TaskStatus::memory;
      })))
    fail("the data store holds keys no task record accounts for");
}

}  // namespace taskwire::worker
