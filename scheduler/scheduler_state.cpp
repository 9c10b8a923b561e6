// handle(): one event in, instructions out; and the helpers that emit instructions.
#include <taskwire/scheduler/scheduler_state.hpp>

#include <taskwire/runtime/stimulus_id.hpp>

#include <utility>

namespace taskwire::scheduler {

SchedulerState::SchedulerState(SchedulerOptions options) : options_(std::move(options)) {}

SchedulerState::~SchedulerState() = default;

Instructions SchedulerState::handle(const Event& event) {
  out_.clear();
  last_to_worker_.clear();
  // Only a client's release can stop a task a worker is running; the worker's own stimuli
  // (erred, missing data) concern tasks that are not running any more.
  release_may_leave_running_ = std::holds_alternative<CancelKeys>(event) ||
                               std::holds_alternative<ClientReleasesKeys>(event) ||
                               std::holds_alternative<RemoveClient>(event);
  std::visit(
      [this](const auto& e) {
        runtime::set_stimulus_id(stimulus_id_, e.stimulus_id, e.kind, stimulus_counter_);
        on(e);
      },
      event);
  run_transitions();
  if (std::exchange(retry_unrunnable_, false)) {
    schedule_unrunnable();
    run_transitions();
  }
  schedule_queued();  // anything may have freed a slot; ready non-root work went first
  run_transitions();  // what the queue placed may let dependents be assigned ahead
  balance();          // what the queue did not fill, stealing may
  drain_retiring();   // after stealing, which may have moved work off a retiring worker
  if (!rebalance_requests_.empty()) settle_rebalance();
  forgotten_.clear();
  removed_workers_.clear();
  last_to_worker_.clear();
  return std::exchange(out_, {});
}

void SchedulerState::emit_to_worker(WorkerState* ws, Instruction instruction) {
  last_to_worker_[ws] = out_.size();
  out_.push_back(std::move(instruction));
}

void SchedulerState::free_keys(WorkerState* ws, const std::string& key, bool processing) {
  if (ws->removed) return;
  auto it = last_to_worker_.find(ws);
  if (it != last_to_worker_.end()) {
    if (auto* pending = std::get_if<FreeKeys>(&out_[it->second]);
        pending && pending->processing == processing) {
      pending->keys.push_back(key);  // one FreeKeys per worker until something else is sent
      return;
    }
  }
  emit_to_worker(ws, FreeKeys{ws->address, {key}, stimulus_id_, processing});
}

void SchedulerState::log(LogLevel level, std::string message) {
  out_.push_back(LogEvent{level, std::move(message), stimulus_id_});
}

TaskState* SchedulerState::find_task(std::string_view key) const {
  auto it = tasks_.find(key);
  return it != tasks_.end() ? it->second.get() : nullptr;
}

FunctionName SchedulerState::intern_function(const std::string& name) {
  return FunctionName(&*function_names_.insert(name).first);
}

WorkerState* SchedulerState::find_worker(std::string_view address) const {
  auto it = workers_.find(address);
  return it != workers_.end() ? it->second.get() : nullptr;
}

ClientState* SchedulerState::find_client(std::string_view id) const {
  auto it = clients_.find(id);
  return it != clients_.end() ? it->second.get() : nullptr;
}

ClientState* SchedulerState::ensure_client(const std::string& id) {
  auto& slot = clients_[id];
  if (!slot) {
    slot = std::make_unique<ClientState>();
    slot->id = id;
  }
  return slot.get();
}

}  // namespace taskwire::scheduler
