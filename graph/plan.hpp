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
    /// Empty: one combine call over `parts`. Else (fuse_levels) the node runs several calls in
    /// one task, in this order: a step lists its parts as indices, below parts.size() into
    /// `parts`, from there on into the results of earlier steps; the last step's is the node's.
    std::vector<std::vector<std::size_t>> steps;
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

/// The same combine calls (same batches, same order within each subtree) grouped into fewer
/// tasks: every node of the result runs the calls of one subtree whose heights above the
/// leaves lie in one band of `levels` (1..levels, levels+1..2*levels, ...), so a binary
/// tree's tasks each make at most 2^levels - 1 calls, and the many at the bottom that many.
/// levels 1 gives `plan` back. Throws std::invalid_argument for levels 0.
ReducePlan fuse_levels(const ReducePlan& plan, std::size_t levels);

}  // namespace taskwire::graph
