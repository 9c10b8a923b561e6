#pragma once
// The workloads of `taskwire-bench workloads`: a tiled Cholesky, k-means over scattered
// chunks and a sample sort, each run in a cluster through the public client API and on
// std::threads in this process with the same kernels (bench/workload_kernels.hpp), each
// result checked.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <taskwire/client/client.hpp>
#include <vector>

namespace taskwire::bench {

struct WorkloadSizes {
  int chol_tiles = 8;                                 ///< tiles per side
  int chol_tile = 256;                                ///< tile side b (N = tiles * b)
  std::size_t kmeans_bytes = std::size_t{128} << 20;  ///< of points, all chunks together
  int kmeans_chunks = 16;
  int kmeans_iterations = 10;
  int kmeans_k = 8;
  int kmeans_dims = 4;
  std::size_t sort_keys = std::size_t{16} << 20;  ///< int64 keys
  int sort_parts = 8;                             ///< P: input parts, and outputs
  int sort_samples = 256;                         ///< samples per part
  std::uint64_t seed = 20261205;
  int threads = 2;  ///< of the in-process run
  /// Values per scatter_each call (0: all in one call; the client serializes all first).
  int scatter_batch = 0;
};

/// One run's times: the data put into the cluster (scatter; 0 on threads) and the
/// computation from data in place to results in place.
struct WorkloadTiming {
  double scatter_seconds = 0;
  double compute_seconds = 0;
};

/// A workload: its inputs made once (prepare), then run any number of times on threads or
/// in a cluster. A run whose result is wrong throws std::runtime_error saying how.
class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  /// Makes the inputs (in this process: the client's, or the threads').
  virtual void prepare() = 0;
  virtual WorkloadTiming run_threads() = 0;
  virtual WorkloadTiming run_cluster(Client& client) = 0;
  /// What was checked, for the report ("residual 3e-16", ...), after a run.
  virtual std::string checked() const = 0;
};

/// "cholesky", "kmeans", "sort"; throws std::invalid_argument for another name.
std::unique_ptr<Workload> make_workload(const std::string& name, const WorkloadSizes& sizes);

std::unique_ptr<Workload> make_cholesky(const WorkloadSizes& sizes);
std::unique_ptr<Workload> make_kmeans(const WorkloadSizes& sizes);
std::unique_ptr<Workload> make_sort(const WorkloadSizes& sizes);

}  // namespace taskwire::bench
