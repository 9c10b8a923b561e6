#pragma once
// What the scheduler server holds of each task besides what the state machine keeps: its
// arguments with their payload frames (never deserialized), held from update_graph until
// the state machine drops the spec (DropTaskSpec), and the small results workers sent
// inline, given to consumers placed on other workers (small_results.hpp). It writes the
// compute_task a ComputeTask instruction becomes. On the scheduler's strand only. Not
// installed API.
#include <taskwire/runtime/batch.hpp>
#include <taskwire/runtime/protocol.hpp>
#include <taskwire/scheduler/instructions.hpp>
#include <taskwire/scheduler/scheduler_state.hpp>
#include <taskwire/scheduler/small_results.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace taskwire::scheduler {

class TaskSpecStore {
 public:
  /// Keeps `task`'s arguments (moved out of it; its dependencies copied), the frames they
  /// refer to copied from `frames` and re-indexed; returns the spec's new reference. Throws
  /// std::runtime_error when an argument refers past `frames`.
  SpecRef keep(protocol::TaskSpec& task, std::span<const runtime::Frame> frames);
  /// Adds `task`'s compute_task to `out` (nothing when null), with the small results of its
  /// dependencies that its worker does not hold; logs an error when its spec is gone.
  void write_compute_task(const ComputeTask& task, const SchedulerState& state,
                          runtime::BatchWriter* out) const;
  /// `bytes`, sent inline with the current attempt's task_finished, kept for consumers
  /// (ignored above a size a worker sends inline by default).
  void keep_result(const protocol::Key& key, std::uint64_t attempt, const runtime::Frame& bytes);
  /// The state machine dropped `spec` (`key`'s).
  void drop(SpecRef spec, const protocol::Key& key);

  std::size_t size() const { return specs_.size(); }
  /// The bytes of the argument frames held.
  std::uint64_t frame_bytes() const;

 private:
  struct StoredSpec {
    std::vector<protocol::ArgSpec> args;  // frame args re-indexed into `frames`
    std::vector<protocol::Key> dependencies;
    std::uint32_t retries = 0;
    std::vector<runtime::Frame> frames;
  };

  /// What SmallResults may hold: the frontier of a graph of small results (a TaskBench
  /// stencil result costs ~200 B there) fits many times over (docs/assign-ahead.md, "Small
  /// inputs ride with the task").
  static constexpr std::size_t kSmallResultsBytes = std::size_t{8} << 20;
  /// The largest result kept there: WorkerOptions::inline_result_bytes's default.
  static constexpr std::size_t kSmallResultMaxBytes = 8 * 1024;

  std::unordered_map<SpecRef, StoredSpec> specs_;
  SpecRef next_spec_ = 0;
  SmallResults small_results_{kSmallResultsBytes};
};

}  // namespace taskwire::scheduler
