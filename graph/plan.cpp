#include <taskwire/graph/plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace taskwire::graph {

std::string_view to_string(ReduceMode mode) {
  switch (mode) {
    case ReduceMode::single_node: return "single_node";
    case ReduceMode::tree: return "tree";
    case ReduceMode::tree_n: return "tree_n";
  }
  throw std::invalid_argument(fmt::format("unknown reduce mode {}; the modes are single_node, "
                                          "tree and tree_n", static_cast<int>(mode)));
}

ReduceMode reduce_mode_from_string(std::string_view name) {
  for (auto m : {ReduceMode::single_node, ReduceMode::tree, ReduceMode::tree_n})
    if (name == to_string(m)) return m;
  throw std::invalid_argument(fmt::format("unknown reduce mode '{}'; the modes are single_node, "
                                          "tree and tree_n", name));
}

namespace detail {
void validate_reduce(ReduceMode mode, std::size_t n_batch, std::size_t ninputs, bool has_initial) {
  (void)to_string(mode);  // throws for a value outside the enum
  if (n_batch < 2)
    throw std::invalid_argument(fmt::format(
        "reduce: n_batch is {}, it must be at least 2 (a combine call needs 2 results to make "
        "progress)", n_batch));
  if (ninputs == 0 && !has_initial)
    throw std::invalid_argument("reduce over an empty input list: there is nothing to combine; "
                                "set ReduceOptions::initial to define the result");
}
}  // namespace detail

ReducePlan plan_reduce(std::size_t leaves, ReduceMode mode, std::size_t n_batch,
                       bool leaves_are_batches) {
  detail::validate_reduce(mode, n_batch, leaves, false);
  ReducePlan plan;
  plan.leaves = leaves;
  std::vector<std::size_t> level(leaves);
  for (std::size_t i = 0; i < leaves; ++i) level[i] = i;
  auto add_node = [&](std::vector<std::size_t> parts) {
    plan.nodes.push_back({std::move(parts)});
    return plan.leaves + plan.nodes.size() - 1;
  };
  if (mode == ReduceMode::single_node) {
    plan.root = add_node(std::move(level));
    return plan;
  }
  const std::size_t batch = mode == ReduceMode::tree ? 2 : n_batch;
  while (level.size() > 1) {
    std::vector<std::size_t> next;
    for (std::size_t i = 0; i < level.size(); i += batch) {
      const std::size_t end = std::min(level.size(), i + batch);
      if (end - i == 1) next.push_back(level[i]);  // a trailing singleton goes up unchanged
      else next.push_back(add_node({level.begin() + static_cast<std::ptrdiff_t>(i),
                                    level.begin() + static_cast<std::ptrdiff_t>(end)}));
    }
    level = std::move(next);
  }
  plan.root = level.front();
  if (leaves_are_batches && plan.root < plan.leaves) plan.root = add_node({plan.root});
  return plan;
}

}  // namespace taskwire::graph
