#include "bench/taskbench/point_task.hpp"

#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/runtime/raw_codec.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace taskwire::taskbench {
namespace {

std::atomic<const std::vector<TaskGraph>*> task_graphs{nullptr};

// A std::vector<char> in the runtime's encoding: its element count (std::uint64_t), then the
// bytes (runtime/raw_codec.hpp). Read and written in place, so no input or output byte is
// copied on the way to and from execute_point.
constexpr std::size_t kCountBytes = sizeof(std::uint64_t);

std::pair<const char*, std::size_t> bytes_of(const runtime::Frame& frame, std::size_t input) {
  std::uint64_t count = 0;
  if (frame.size() >= kCountBytes) std::memcpy(&count, frame.data(), kCountBytes);
  if (frame.size() < kCountBytes || count != frame.size() - kCountBytes)
    throw std::invalid_argument(fmt::format(
        "input {} is not a std::vector<char> ({} bytes in its frame)", input, frame.size()));
  return {frame.data() + kCountBytes, static_cast<std::size_t>(count)};
}

runtime::Frame output_frame(std::size_t bytes, char*& payload) {
  auto frame = runtime::Frame::allocate(kCountBytes + bytes);
  runtime::raw_codec::encode(static_cast<std::uint64_t>(bytes), frame.mutable_data());
  payload = frame.mutable_data() + kCountBytes;
  return frame;
}

// execute_point reads inputs as std::pair<long, long>; a received frame may start anywhere
// in its message's buffer, so an input that is not aligned for that is read from a copy.
const char* aligned_input(const char* p, std::size_t bytes, std::vector<long>& copy) {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(std::pair<long, long>) == 0) return p;
  copy.resize((bytes + sizeof(long) - 1) / sizeof(long));
  std::memcpy(copy.data(), p, bytes);
  return reinterpret_cast<const char*>(copy.data());
}

// Scratch per thread and graph, prepared once, as TaskBench's other implementations keep one
// per worker thread (execute_point checks its magic words on every call).
char* scratch_for(const TaskGraph& g) {
  thread_local std::vector<std::vector<char>> scratch;
  if (g.scratch_bytes_per_task == 0) return nullptr;
  if (scratch.size() <= static_cast<std::size_t>(g.graph_index)) scratch.resize(g.graph_index + 1);
  auto& s = scratch[g.graph_index];
  if (s.size() != g.scratch_bytes_per_task) {
    s.assign(g.scratch_bytes_per_task, 0);
    TaskGraph::prepare_scratch(s.data(), s.size());
  }
  return s.data();
}

const TaskGraph& graph_of(std::int64_t index) {
  const auto* graphs = task_graphs.load(std::memory_order_acquire);
  if (!graphs) throw std::logic_error("taskbench_point: set_task_graphs was not called on this rank");
  if (index < 0 || static_cast<std::size_t>(index) >= graphs->size())
    throw std::invalid_argument(fmt::format("taskbench_point: no task graph {}", index));
  return (*graphs)[static_cast<std::size_t>(index)];
}

runtime::Frame run_point(const std::vector<runtime::Frame>& args) {
  if (args.empty()) throw std::invalid_argument("taskbench_point: expects the point's id first");
  const auto id = runtime::from_frame<std::vector<std::int64_t>>(args[0]);
  if (id.size() != 3)
    throw std::invalid_argument("taskbench_point: the id is {graph, timestep, point}");
  const TaskGraph& g = graph_of(id[0]);
  const std::size_t n_inputs = args.size() - 1;
  thread_local std::vector<const char*> input_ptr;
  thread_local std::vector<std::size_t> input_bytes;
  thread_local std::vector<std::vector<long>> copies;
  input_ptr.resize(n_inputs);
  input_bytes.resize(n_inputs);
  if (copies.size() < n_inputs) copies.resize(n_inputs);
  for (std::size_t i = 0; i < n_inputs; ++i) {
    auto [p, n] = bytes_of(args[i + 1], i);
    input_ptr[i] = aligned_input(p, n, copies[i]);
    input_bytes[i] = n;
  }
  char* output = nullptr;
  auto frame = output_frame(g.output_bytes_per_task, output);
  g.execute_point(id[1], id[2], output, g.output_bytes_per_task, input_ptr.data(),
                  input_bytes.data(), n_inputs, scratch_for(g), g.scratch_bytes_per_task);
  return frame;
}

[[maybe_unused]] const bool registered = [] {
  runtime::FunctionRegistry::global().add(kPointFunction, reinterpret_cast<const void*>(&run_point),
                                          1, run_point);  // 1 or more arguments
  return true;
}();

}  // namespace

void set_task_graphs(const std::vector<TaskGraph>* graphs) {
  task_graphs.store(graphs, std::memory_order_release);
}

}  // namespace taskwire::taskbench
