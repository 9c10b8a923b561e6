// The two functions graph tasks call by name in every process that links taskwire: they apply a
// registered function over a chunk of inputs, and a registered combine over the results of
// several tasks, through the typed batch invokers TASKWIRE_REGISTER provides.
#include <taskwire/graph/run.hpp>
#include <taskwire/runtime/function_registry.hpp>

#include <fmt/format.h>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <stdexcept>

namespace taskwire::graph::detail {
namespace {

const runtime::RegisteredFunction& registered(const runtime::Frame& name_frame) {
  const auto name = runtime::from_frame<std::string>(name_frame);
  const auto* fn = runtime::FunctionRegistry::global().find(name);
  if (!fn)
    throw std::invalid_argument(fmt::format("function '{}' is not registered in this process: add "
                                            "TASKWIRE_REGISTER to a file it links (or --preload's)",
                                            name));
  return *fn;
}

const runtime::RegisteredFunction& combiner(const runtime::Frame& name_frame) {
  const auto& fn = registered(name_frame);
  if (!fn.invoke_gathered)
    throw std::invalid_argument(fmt::format(
        "'{}' cannot combine results: its first parameter must be a std::vector", fn.name));
  return fn;
}

runtime::Frame map_chunk(const std::vector<runtime::Frame>& args) {
  if (args.size() != 3) throw std::invalid_argument("map_chunk: expects 3 arguments");
  const auto& fn = registered(args[0]);
  const auto first = runtime::from_frame<std::uint64_t>(args[1]);
  if (!fn.invoke_each)
    throw std::invalid_argument(fmt::format(
        "'{}' cannot run over a chunk: it must take one parameter and return a value", fn.name));
  std::size_t at = 0;
  try {
    return fn.invoke_each(args[2], at);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("map input {}: {}", first + at, e.what()));
  }
}

runtime::Frame combine(const std::vector<runtime::Frame>& args) {
  if (args.size() < 2) throw std::invalid_argument("combine: expects at least 2 arguments");
  const auto& fn = combiner(args[0]);
  const auto batch = runtime::from_frame<std::vector<std::uint8_t>>(args[1]);
  if (args.size() < 2 + batch.size())
    throw std::invalid_argument("combine: fewer parts than batch flags");
  const auto rest_end = args.end() - static_cast<std::ptrdiff_t>(batch.size());
  return fn.invoke_gathered({rest_end, args.end()}, batch, {args.begin() + 2, rest_end});
}

// A fused reduce node: its steps' combine calls in order, each over some of the node's parts
// and earlier steps' results (ReducePlan::Node::steps).
runtime::Frame combine_steps(const std::vector<runtime::Frame>& args) {
  if (args.size() < 3) throw std::invalid_argument("combine_steps: expects at least 3 arguments");
  const auto& fn = combiner(args[0]);
  const auto steps = runtime::from_frame<std::vector<std::vector<std::size_t>>>(args[1]);
  const auto batch = runtime::from_frame<std::vector<std::uint8_t>>(args[2]);
  if (args.size() < 3 + batch.size())
    throw std::invalid_argument("combine_steps: fewer parts than batch flags");
  if (steps.empty()) throw std::invalid_argument("combine_steps: no steps");
  const auto parts = args.end() - static_cast<std::ptrdiff_t>(batch.size());
  const std::vector<runtime::Frame> params(args.begin() + 3, parts);
  // Each step's result, dropped after its last use (a step's result feeds one later step).
  std::vector<runtime::Frame> done;
  std::vector<std::size_t> uses_left(steps.size(), 0);
  for (const auto& step : steps)
    for (auto ref : step)
      if (ref >= batch.size() && ref - batch.size() < steps.size()) ++uses_left[ref - batch.size()];
  std::vector<runtime::Frame> frames;
  std::vector<std::uint8_t> flags;
  for (const auto& step : steps) {
    frames.clear();
    flags.clear();
    for (auto ref : step) {
      if (ref < batch.size()) {
        frames.push_back(parts[static_cast<std::ptrdiff_t>(ref)]);
        flags.push_back(batch[ref]);
      } else if (const auto i = ref - batch.size(); i < done.size() && uses_left[i] > 0) {
        frames.push_back(done[i]);
        flags.push_back(0);
        if (--uses_left[i] == 0) done[i] = {};
      } else {
        throw std::invalid_argument(
            "combine_steps: a step uses a result not yet computed, or one already used");
      }
    }
    done.push_back(fn.invoke_gathered(frames, flags, params));
  }
  return done.back();
}

[[maybe_unused]] const bool registered_runners = [] {
  auto& registry = runtime::FunctionRegistry::global();
  registry.add(kMapChunk, reinterpret_cast<const void*>(&map_chunk), 3, map_chunk);
  registry.add(kCombine, reinterpret_cast<const void*>(&combine), 2, combine);  // 2 or more
  registry.add(kCombineSteps, reinterpret_cast<const void*>(&combine_steps), 3, combine_steps);
  return true;
}();

}  // namespace
}  // namespace taskwire::graph::detail
