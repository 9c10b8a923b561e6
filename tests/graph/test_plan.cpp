// graph::plan_reduce: the shape of each reduce mode, with no cluster.
#include <taskwire/graph/plan.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace taskwire::graph;
using Parts = std::vector<std::size_t>;

namespace {

std::vector<Parts> parts_of(const ReducePlan& p) {
  std::vector<Parts> out;
  for (const auto& n : p.nodes) out.push_back(n.parts);
  return out;
}

// Evaluates the plan with string concatenation: every leaf must appear once, in order.
std::string evaluate(const ReducePlan& p) {
  std::vector<std::string> slot(p.slots());
  for (std::size_t i = 0; i < p.leaves; ++i) slot[i] = std::to_string(i) + ",";
  for (std::size_t k = 0; k < p.nodes.size(); ++k) {
    for (auto part : p.nodes[k].parts) {
      REQUIRE(part < p.leaves + k);  // only earlier slots
      slot[p.leaves + k] += slot[part];
    }
  }
  return slot.at(p.root);
}

}  // namespace

TEST_CASE("plan: tree is binary and carries a trailing singleton up", "[graph][plan]") {
  auto p = plan_reduce(5, ReduceMode::tree, 2, false);
  CHECK(parts_of(p) == std::vector<Parts>{{0, 1}, {2, 3}, {5, 6}, {7, 4}});
  CHECK(p.root == 8);
  CHECK(plan_reduce(5, ReduceMode::tree, 7, false).nodes.size() == 4);  // n_batch is tree_n's
}

TEST_CASE("plan: tree_n batches n_batch at a time", "[graph][plan]") {
  auto p = plan_reduce(7, ReduceMode::tree_n, 3, false);
  CHECK(parts_of(p) == std::vector<Parts>{{0, 1, 2}, {3, 4, 5}, {7, 8, 6}});
  auto q = plan_reduce(6, ReduceMode::tree_n, 4, false);
  CHECK(parts_of(q) == std::vector<Parts>{{0, 1, 2, 3}, {4, 5}, {6, 7}});
}

TEST_CASE("plan: single_node is one call over everything", "[graph][plan]") {
  auto p = plan_reduce(3, ReduceMode::single_node, 2, false);
  CHECK(parts_of(p) == std::vector<Parts>{{0, 1, 2}});
  CHECK(parts_of(plan_reduce(1, ReduceMode::single_node, 2, false)) == std::vector<Parts>{{0}});
}

TEST_CASE("plan: one leaf needs no combine unless it holds a batch", "[graph][plan]") {
  auto p = plan_reduce(1, ReduceMode::tree, 2, false);
  CHECK(p.nodes.empty());
  CHECK(p.root == 0);
  auto b = plan_reduce(1, ReduceMode::tree_n, 3, true);
  CHECK(parts_of(b) == std::vector<Parts>{{0}});
  CHECK(b.root == 1);
}

TEST_CASE("plan: every mode keeps every leaf once, in order", "[graph][plan]") {
  for (std::size_t n = 1; n <= 40; ++n)
    for (auto mode : {ReduceMode::single_node, ReduceMode::tree, ReduceMode::tree_n})
      for (std::size_t b = 2; b <= 6; ++b)
        for (bool batches : {false, true}) {
          auto p = plan_reduce(n, mode, b, batches);
          std::string expected;
          for (std::size_t i = 0; i < n; ++i) expected += std::to_string(i) + ",";
          INFO("n " << n << " mode " << to_string(mode) << " n_batch " << b);
          CHECK(evaluate(p) == expected);
          if (batches) CHECK(p.root >= p.leaves);
        }
}

TEST_CASE("plan: bad requests are std::invalid_argument", "[graph][plan]") {
  CHECK_THROWS_AS(plan_reduce(0, ReduceMode::tree, 2, false), std::invalid_argument);
  CHECK_THROWS_AS(plan_reduce(3, ReduceMode::tree_n, 1, false), std::invalid_argument);
  CHECK_THROWS_AS(plan_reduce(3, static_cast<ReduceMode>(9), 2, false), std::invalid_argument);
}

namespace {

// Evaluates a fused plan with string concatenation, one step at a time; also counts the calls.
std::string evaluate_fused(const ReducePlan& p, std::size_t& calls) {
  std::vector<std::string> slot(p.slots());
  for (std::size_t i = 0; i < p.leaves; ++i) slot[i] = std::to_string(i) + ",";
  for (std::size_t k = 0; k < p.nodes.size(); ++k) {
    const auto& node = p.nodes[k];
    for (auto part : node.parts) REQUIRE(part < p.leaves + k);
    if (node.steps.empty()) {
      for (auto part : node.parts) slot[p.leaves + k] += slot[part];
      ++calls;
      continue;
    }
    std::vector<std::string> done;
    for (const auto& step : node.steps) {
      std::string r;
      for (auto ref : step) {
        REQUIRE(ref < node.parts.size() + done.size());
        r += ref < node.parts.size() ? slot[node.parts[ref]] : done[ref - node.parts.size()];
      }
      done.push_back(r);
      ++calls;
    }
    slot[p.leaves + k] = done.back();
  }
  return slot.at(p.root);
}

}  // namespace

TEST_CASE("plan: fusing levels keeps every combine call and the order, in fewer nodes",
          "[graph][plan]") {
  for (std::size_t leaves : {1, 2, 5, 8, 16, 17, 100, 3414, 3804, 10000}) {
    for (auto mode : {ReduceMode::single_node, ReduceMode::tree, ReduceMode::tree_n}) {
      for (bool batches : {false, true}) {
        const auto plan = plan_reduce(leaves, mode, 3, batches);
        std::size_t plain_calls = 0;
        const auto expected = evaluate_fused(plan, plain_calls);
        CHECK(plain_calls == plan.nodes.size());
        for (std::size_t levels : {1, 2, 3, 4}) {
          INFO("leaves " << leaves << " mode " << to_string(mode) << " levels " << levels);
          const auto fused = fuse_levels(plan, levels);
          std::size_t calls = 0;
          CHECK(evaluate_fused(fused, calls) == expected);
          CHECK(calls == plan.nodes.size());
          CHECK(fused.nodes.size() <= plan.nodes.size());
          if (mode == ReduceMode::tree)  // a subtree at most `levels` high: 2^levels - 1 calls
            for (const auto& node : fused.nodes)
              CHECK(std::max<std::size_t>(node.steps.size(), 1) <= (std::size_t{1} << levels) - 1);
          if (levels == 1) CHECK(parts_of(fused) == parts_of(plan));
        }
      }
    }
  }
  // 16 leaves, 3 levels: the 7 calls over leaves 0-7, those over 8-15, then the root's call.
  const auto fused = fuse_levels(plan_reduce(16, ReduceMode::tree, 2, false), 3);
  REQUIRE(fused.nodes.size() == 3);
  CHECK(fused.nodes[0].parts == Parts{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(fused.nodes[0].steps == std::vector<Parts>{{0, 1}, {2, 3}, {4, 5}, {6, 7},
                                                   {8, 9}, {10, 11}, {12, 13}});
  CHECK(fused.nodes[1].steps.size() == 7);
  CHECK(fused.nodes[2].parts == Parts{16, 17});
  CHECK(fused.nodes[2].steps.empty());
  CHECK(fused.root == 18);
  // 10 000 leaves: about an eighth of the binary tree's 9 999 tasks.
  CHECK(fuse_levels(plan_reduce(10000, ReduceMode::tree, 2, false), 3).nodes.size() == 1431);
  CHECK_THROWS_WITH(fuse_levels(plan_reduce(4, ReduceMode::tree, 2, false), 0),
                    Catch::Contains("reduce_fuse_levels"));
}
