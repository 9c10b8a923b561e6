#pragma once
// The compute_task operation as the scheduler writes it: the bytes of a protocol::ComputeTask
// (runtime/wire_codec.hpp) straight from the stored spec and the instruction's dependency
// locations, without first copying both into a ComputeTask (every string of the spec and a
// map of holders per task). Write-only; workers read a protocol::ComputeTask.
#include <taskwire/runtime/protocol.hpp>
#include <taskwire/scheduler/instructions.hpp>

#include <cstdint>
#include <vector>

namespace taskwire::scheduler {

struct ComputeTaskWire {
  const protocol::TaskSpec& spec;
  std::int64_t priority;                                ///< sent instead of spec.priority
  const std::vector<DependencyLocation>& dependencies;  ///< sent as ComputeTask::who_has
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    // protocol::TaskSpec::serialize's order, then the who_has map: a count, then pairs.
    ar & spec.key & spec.function & spec.args & spec.dependencies & priority & spec.retries;
    ar & static_cast<std::uint64_t>(dependencies.size());
    for (const auto& d : dependencies) ar & d.key & d.who_has;
  }
};

}  // namespace taskwire::scheduler
