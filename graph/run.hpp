#pragma once
// The untyped part of graph::execute: submits a graph's tasks through a connected client, tracks
// them (progress, failures, the max_workers window) and returns result frames. execute.hpp
// turns values into frames and back around it.
#include <taskwire/client/client.hpp>
#include <taskwire/graph/options.hpp>
#include <taskwire/graph/plan.hpp>
#include <taskwire/runtime/frame.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskwire::graph::detail {

/// Registered in every process that links taskwire (graph/runners.cpp).
/// map_chunk(fn name, first input index, std::vector of inputs) -> std::vector of fn's results.
inline constexpr const char* kMapChunk = "taskwire::graph::map_chunk";
/// combine(combine name, batch flags, params..., parts...) -> one result (see GatherInvoker).
inline constexpr const char* kCombine = "taskwire::graph::combine";
/// combine_steps(combine name, steps, batch flags, params..., parts...) -> the last step's
/// result: a fused reduce node (ReducePlan::Node::steps), one combine call per step.
inline constexpr const char* kCombineSteps = "taskwire::graph::combine_steps";

struct MapTask {
  std::vector<std::uint32_t> args;  ///< indices into Job::frames
  std::size_t first_input = 0;      ///< the graph's index of the task's first input
  std::vector<std::uint32_t> futures = {};  ///< then indices into Job::futures
};

struct Job {
  std::string function;                ///< what every map task calls: fn, or kMapChunk
  std::vector<runtime::Frame> frames;  ///< the map tasks' argument frames, shared by index
  std::vector<Future<runtime::Frame>> futures;  ///< the map tasks' inputs in the cluster
  std::vector<MapTask> tasks;
  bool chunked = false;  ///< each map task returns a std::vector of results
  // A reduction in the cluster, when `plan` is set; its leaves are `initial` (when set), then the
  // map tasks.
  std::optional<ReducePlan> plan;
  std::string combine;  ///< the registered combine function
  std::vector<runtime::Frame> params;
  std::optional<runtime::Frame> initial;  ///< serialized as a map task's result would be
};

/// Runs `job` through `client`. Without a plan: every map task's result frame, in order. With
/// one: the root's frame alone. A failed map task throws MapError; any other failure TaskError.
std::vector<runtime::Frame> run(Client& client, const Job& job, const ExecuteOptions& options);

/// Throws std::invalid_argument for options execute cannot honour.
void validate(const ExecuteOptions& options);

/// Arms the teardown watchdog when options.exit_after_seconds asks for it.
void arm_exit_watchdog(const ExecuteOptions& options);

}  // namespace taskwire::graph::detail
