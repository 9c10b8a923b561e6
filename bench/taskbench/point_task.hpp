#pragma once
// The task every TaskBench point runs on a worker: TaskGraph::execute_point over its inputs'
// bytes, returning its output bytes.
//
// Arguments: frame 0 is the point's id, std::vector<std::int64_t>{graph index, timestep,
// point}; frames 1.. are the outputs of its dependencies in TaskGraph::dependencies order,
// each a std::vector<char> as the runtime encodes it. The result is one std::vector<char>
// (the runtime's plain-bytes fast path: Client::gather and Future<std::vector<char>>::get
// decode it as such). execute_point checks every input's bytes (its timestep and point in
// each 16-byte pair) and aborts the process on a wrong one, so a wrong dependency ends the
// whole MPI job with a non-zero exit.
//
// The task takes as many inputs as the point has dependencies (all_to_all: the graph's
// width), which no fixed C++ signature can: so it is registered under kPointFunction as a
// plain invoker over frames (FunctionRegistry::add, what TASKWIRE_REGISTER expands to), as
// graph/runners.cpp registers its variadic combine.
#include "core.h"

#include <vector>

namespace taskwire::taskbench {

inline constexpr const char* kPointFunction = "taskbench_point";

/// The graphs the point task runs against, by TaskGraph::graph_index. Every rank builds the
/// same App from the same argv and sets this once, before the cluster starts; the vector must
/// outlive the cluster. This is the driver's one piece of process-global state: a task finds
/// its graph here, by the index in its id.
void set_task_graphs(const std::vector<TaskGraph>* graphs);

}  // namespace taskwire::taskbench
