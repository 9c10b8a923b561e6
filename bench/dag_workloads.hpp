#pragma once
// The task graphs of `taskwire-bench dag`: graphs that move data between workers, each written
// once over an executor so that the same code builds the graph in a cluster (ClusterExec:
// every call is a submitted task, its Future the dependency of the next) and computes the
// expected result directly in the client (DirectExec: every call runs at once). Both do the
// same floating-point operations in the same order, so a result is right only if it is equal
// bit for bit.
//
// Payloads are std::vector<double> (copied straight into frames: the runtime's fast path).
// `bytes` is the size of the result each task passes on (what moves when it moves).
#include <taskwire/client/client.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace taskwire::bench {

using Payload = std::vector<double>;

/// Shapes of the graphs (the payload size is a separate argument).
struct DagShape {
  int stencil_width = 4;  ///< stencil: blocks (a ring: each task reads both neighbours)
  int stencil_steps = 8;  ///< stencil: time steps
  int matmul_blocks = 4;  ///< matmul: blocks per side (output blocks are bytes each)
  int matmul_inner = 8;   ///< matmul: inner extent of an A or B block (rows x inner, inner x cols)
  int tree_leaves = 8;    ///< tree: map leaves, then a binary tree of element-wise adds
};

/// What a graph is: its name, and how many tasks it is for a payload size.
struct DagWorkload {
  std::string name;
  int (*tasks)(const DagShape&);
};

/// The suite: stencil, matmul, tree, shuffle (every output reads a piece of every input).
const std::vector<DagWorkload>& dag_workloads();

/// Runs `workload` in the cluster and returns its checksum (the sum, in a fixed order, of the
/// graph's per-block checksums: small results gathered by the client).
double run_in_cluster(Client& client, const std::string& workload, std::size_t bytes,
                      const DagShape& shape);
/// The same graph computed here, in the calling process.
double run_directly(const std::string& workload, std::size_t bytes, const DagShape& shape);

/// Bytes actually carried by a result of the workload at the requested size (matmul's square
/// blocks round it down).
std::size_t payload_bytes(const std::string& workload, std::size_t bytes);

}  // namespace taskwire::bench
