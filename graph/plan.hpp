#pragma once
// The shape of a reduction, apart from any data: which combine calls take which inputs. The same
// plan drives a reduce in the cluster and one on the client, so both call combine alike.
#include <taskwire/graph/graph.hpp>

#include <cstddef>
#include <vector>

namespace taskwire::graph {

/// Slots 0..leaves-1 are the leaves (map tasks, and the initial value first when given); node k
/// writes slot leaves + k. A node's parts are earlier slots, in the order their results are
/// concatenated. Nodes are listed level by level, so each depends only on earlier ones.
struct ReducePlan {
  struct Node {
    std::vector<std::size_t> parts;
  };
  std::size_t leaves = 0;
  std::vector<Node> nodes;
  std::size_t root = 0;  ///< the slot holding the result
  std::size_t slots() const noexcept { return leaves + nodes.size(); }
};

/// Plans a reduction over `leaves` (>= 1) slots. With leaves_are_batches (each leaf holds several
/// results, as a chunk does) the root is always a node, so the result is one combine's output.
/// Throws std::invalid_argument for no leaves, an unknown mode or n_batch < 2.
ReducePlan plan_reduce(std::size_t leaves, ReduceMode mode, std::size_t n_batch,
                       bool leaves_are_batches);

}  // namespace taskwire::graph
