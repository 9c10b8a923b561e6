// graph::plan_reduce: the shape of each reduce mode, with no cluster.
#include <taskwire/graph/plan.hpp>

#include <catch2/catch.hpp>

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
