#include <taskwire/graph/plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
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
    plan.nodes.push_back({std::move(parts), {}});
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

ReducePlan fuse_levels(const ReducePlan& plan, std::size_t levels) {
  if (levels == 0)
    throw std::invalid_argument("reduce_fuse_levels is 0: a reduce task runs at least one level "
                                "of combine calls (1: one call per task)");
  if (levels == 1 || plan.nodes.size() < 2) return plan;
  constexpr auto none = std::numeric_limits<std::size_t>::max();
  const std::size_t leaves = plan.leaves, n = plan.nodes.size();
  // Height above the leaves, and the node each node feeds (none for the root).
  std::vector<std::size_t> height(n, 0), consumer(n, none);
  for (std::size_t k = 0; k < n; ++k) {
    for (auto p : plan.nodes[k].parts)
      if (p >= leaves) {
        height[k] = std::max(height[k], height[p - leaves]);
        consumer[p - leaves] = k;
      }
    ++height[k];
  }
  // Heights fall into bands of `levels` (1..levels, levels+1..2*levels, ...). A group ends at
  // a node whose consumer is in a higher band, or at the root; every other node joins the
  // group of the node it feeds, so a group's calls span one band. Consumers come later in the
  // plan, so walk it backwards.
  auto band = [&](std::size_t k) { return (height[k] - 1) / levels; };
  std::vector<std::size_t> group(n);
  std::vector<bool> top(n);
  for (std::size_t k = n; k-- > 0;) {
    top[k] = consumer[k] == none || band(k) != band(consumer[k]);
    group[k] = top[k] ? k : group[consumer[k]];
  }
  // Fused nodes in the order of their tops: a group's inputs are leaves or lower groups' tops,
  // which come before any of its members, so before its top.
  std::vector<std::size_t> fused_slot(n, none);
  ReducePlan out;
  out.leaves = leaves;
  std::vector<std::vector<std::size_t>> members(n);
  for (std::size_t k = 0; k < n; ++k) members[group[k]].push_back(k);
  std::vector<std::size_t> step_of(n, none);  // member -> its step in its group
  for (std::size_t t = 0; t < n; ++t) {
    if (!top[t]) continue;
    ReducePlan::Node node;
    std::vector<std::vector<std::pair<bool, std::size_t>>> refs;  // (is a step, index)
    for (auto m : members[t]) {
      auto& r = refs.emplace_back();
      for (auto p : plan.nodes[m].parts) {
        if (p >= leaves && !top[p - leaves]) {
          r.emplace_back(true, step_of[p - leaves]);
          continue;
        }
        const auto slot = p < leaves ? p : fused_slot[p - leaves];
        r.emplace_back(false, node.parts.size());
        node.parts.push_back(slot);
      }
      step_of[m] = refs.size() - 1;
    }
    if (refs.size() > 1)
      for (const auto& r : refs) {
        auto& step = node.steps.emplace_back();
        for (auto [is_step, i] : r) step.push_back(is_step ? node.parts.size() + i : i);
      }
    out.nodes.push_back(std::move(node));
    fused_slot[t] = leaves + out.nodes.size() - 1;
  }
  out.root = plan.root < leaves ? plan.root : fused_slot[plan.root - leaves];
  return out;
}

}  // namespace taskwire::graph
