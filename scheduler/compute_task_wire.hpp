#pragma once
// The compute_task operation as the scheduler writes it: the bytes of a protocol::ComputeTask
// (runtime/wire_codec.hpp) straight from the parts of the spec the server stores (arguments,
// dependencies, retries), the key and function the instruction names and its dependency
// locations, without first copying them into a ComputeTask (every string of the spec and a
// map of holders per task). Write-only; workers read a protocol::ComputeTask.
#include <taskwire/runtime/protocol.hpp>
#include <taskwire/scheduler/instructions.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace taskwire::scheduler {

struct ComputeTaskWire {
  const std::string& key;
  const std::string& function;
  const std::vector<protocol::ArgSpec>& args;
  const std::vector<protocol::Key>& dependencies;  ///< TaskSpec::dependencies
  std::int64_t priority;
  std::uint32_t retries;
  std::int32_t user_priority;
  const std::map<std::string, double>& resources;  ///< the worker's own accounting needs them
  const std::vector<DependencyLocation>& locations;  ///< sent as ComputeTask::who_has
  std::uint64_t attempt;
  const std::vector<protocol::GivenDependency>& given;  ///< ComputeTask::given
  template <class Ar>
  void serialize(Ar& ar, unsigned) {
    // protocol::TaskSpec::serialize's order, then the who_has map: a count, then pairs.
    ar & key & function & args & dependencies & priority & retries & user_priority;
    // Then resources; `workers` and allow_other_workers concern the scheduler only: empty.
    static const std::vector<std::string> kNoWorkers;
    constexpr bool kStrict = false;
    ar & resources & kNoWorkers & kStrict;
    ar & static_cast<std::uint64_t>(locations.size());
    for (const auto& d : locations) ar & d.key & d.who_has;
    ar & attempt & given;
    ar & static_cast<std::uint64_t>(std::count_if(locations.begin(), locations.end(),
                                                  [](const auto& d) { return d.running; }));
    for (const auto& d : locations)
      if (d.running) ar & d.key;
  }
};

}  // namespace taskwire::scheduler
