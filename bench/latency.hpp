#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace taskwire::bench {

struct LatencyOptions {
  std::vector<std::string> backends;  ///< tcp, raw-tcp, inproc, mpi, raw-mpi
  std::vector<std::size_t> sizes;     ///< bytes per message
  std::size_t max_iterations = 10'000;
  double seconds_per_size = 0.4;
  double idle_seconds = 0;  ///< under mpiexec: also measure each rank's CPU while idle
  /// Under mpiexec, for mpi and tcp: also `idle_rounds` single round trips of the first size,
  /// each after both ranks were idle this long (rows "<backend>-idle").
  double idle_gap_seconds = 0;
  std::size_t idle_rounds = 10;
  std::string csv;
};

/// Runs the latency comparison and prints a table (and CSV rows
/// backend,bytes,iterations,p50_us,p99_us,mean_us). Returns a process exit code.
int run_latency(const LatencyOptions& options);

}  // namespace taskwire::bench
