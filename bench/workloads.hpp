#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "bench/workloads_suite.hpp"

namespace taskwire::bench {

struct WorkloadsOptions {
  std::vector<std::string> backends;  ///< mpi, tcp (under mpiexec); tcp, inproc (alone)
  std::vector<std::string> workloads{"cholesky", "kmeans", "sort"};
  WorkloadSizes sizes;
  int repeats = 1;   ///< rounds: each runs every workload on threads, then on the clusters
  int clusters = 1;  ///< clusters per backend per round, one after the other
  int workers = 2;   ///< alone: single-thread workers in this process
  /// Under mpiexec: each rank prints (stderr) its CPU time, page faults and RSS per cluster.
  bool rank_usage = false;
  /// Under mpiexec: each rank allocates, touches and frees this many MiB before its first
  /// cluster (the first-run experiment: docs/measurements.md).
  std::size_t prefault_mib = 0;
  std::string csv;
};

/// Runs the workload suite (workloads_suite.hpp). The inputs are made once and each workload
/// runs once, untimed, on `sizes.threads` std::threads in the client's process. Then each
/// round runs every workload on those threads, and starts, per backend, `clusters` clusters in
/// turn, running every workload on each. Prints per workload and backend the medians and the
/// median of the per-run ratios taskwire/threads (compute times; each backend's first cluster
/// in the process left out when it ran later ones), then every cluster's times by its place
/// in the process, and per backend its first cluster against its second. Appends CSV rows
/// backend,workload,round,cluster,scatter_s,compute_s (backend "threads" and cluster 0 for the
/// in-process runs; cluster counts the clusters this process started, from 1).
/// Under mpiexec (3 ranks or more): rank 0 scheduler, rank 1 client, the rest workers; alone:
/// a scheduler and `workers` workers in this process. Returns 1 if a result was wrong.
int run_workloads(const WorkloadsOptions& options);

}  // namespace taskwire::bench
