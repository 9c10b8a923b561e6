#include <taskwire/scheduler/task_spec_store.hpp>

#include <taskwire/scheduler/compute_task_wire.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>

namespace taskwire::scheduler {

SpecRef TaskSpecStore::keep(protocol::TaskSpec& task, std::span<const runtime::Frame> frames) {
  StoredSpec stored;
  for (auto& a : task.args)
    if (a.kind == protocol::ArgSpec::frame) {
      if (a.frame_index >= frames.size())
        throw std::runtime_error(fmt::format("task {} refers to payload frame {} of {}", task.key,
                                             a.frame_index, frames.size()));
      const auto local = static_cast<std::uint32_t>(stored.frames.size());
      stored.frames.push_back(frames[a.frame_index]);
      a.frame_index = local;
    }
  stored.args = std::move(task.args);
  stored.dependencies = task.dependencies;
  stored.retries = task.retries;
  const SpecRef ref = ++next_spec_;
  specs_.emplace(ref, std::move(stored));
  return ref;
}

void TaskSpecStore::write_compute_task(const ComputeTask& ct, const SchedulerState& state,
                                       runtime::BatchWriter* out) const {
  auto it = specs_.find(ct.spec);
  if (it == specs_.end())  // the state machine drops a spec only once the task cannot run
    return spdlog::error("scheduler: no spec for '{}' (spec {}): not sent", ct.key, ct.spec);
  if (!out) return;
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("scheduler: task '{}' ({}) placed on {}", ct.key, ct.function, ct.worker);
  const StoredSpec& s = it->second;
  std::vector<protocol::GivenDependency> given;
  std::vector<runtime::Frame> frames = s.frames;
  for (const DependencyLocation& d : ct.dependencies) {
    if (std::find(d.who_has.begin(), d.who_has.end(), ct.worker) != d.who_has.end()) continue;
    if (const auto* bytes = small_results_.find(d.key, state.attempt(d.key))) {
      given.push_back({d.key, static_cast<std::uint32_t>(frames.size())});
      frames.push_back(*bytes);
    }
  }
  out->add(protocol::Op::compute_task,
           ComputeTaskWire{ct.key, ct.function, s.args, s.dependencies, ct.priority.order,
                           s.retries, ct.priority.user, ct.resources, ct.dependencies,
                           ct.attempt, given},
           std::move(frames));
}

void TaskSpecStore::keep_result(const protocol::Key& key, std::uint64_t attempt,
                                const runtime::Frame& bytes) {
  if (bytes.size() <= kSmallResultMaxBytes) small_results_.keep(key, attempt, bytes);
}

void TaskSpecStore::drop(SpecRef spec, const protocol::Key& key) {
  specs_.erase(spec);
  small_results_.forget(key);
}

std::uint64_t TaskSpecStore::frame_bytes() const {
  std::uint64_t bytes = 0;
  for (const auto& [ref, spec] : specs_)
    for (const auto& f : spec.frames) bytes += f.size();
  return bytes;
}

}  // namespace taskwire::scheduler
