#pragma once
// taskwire-bench backpressure: a writer much faster than its reader, and what that costs the
// writer's memory. Under `mpiexec.mpich -n 2`, per backend in turn: rank 0 writes fresh
// messages (each allocated and filled, as a producer's results are) as fast as its write
// handlers allow; the reader (rank 1 for mpi and tcp; for inproc a comm in rank 0 itself)
// first reads `calibrate` messages at full speed, which times the writer, then pauses
// `slowdown` times that per message after each read. After `seconds` of that the writer
// closes and the reader reads the rest at full speed. Rank 0 prints its VmRSS growth over the run (peak of the samples taken after each
// handler, less the VmRSS before the first write) against Limits::max_queued_bytes: with
// bounded queues it stays near the bound plus one message, however long the run.
#include <string>
#include <vector>

namespace taskwire::bench {

struct BackpressureOptions {
  std::vector<std::string> backends{"mpi", "tcp", "inproc"};
  std::vector<std::size_t> message_sizes{std::size_t{1} << 20};  ///< one run per size
  double seconds = 10;      ///< the slow phase, after the calibration
  double slowdown = 100;    ///< the reader's pause per message, in calibrated message times
  std::size_t calibrate = 200;  ///< messages read at full speed first
  /// Exit 1 if the writer's RSS grew beyond the bound + one message + this (MiB), or the
  /// reader's (mpi, tcp) beyond twice the bound + one message + this; < 0: never.
  double check_slack_mib = -1;
  std::string csv;  ///< rows backend,bound,message_bytes,written_bytes,seconds,rss_growth
};

/// Collective over the MPI job (2 ranks or more); rank 0 prints. Returns an exit code.
int run_backpressure(const BackpressureOptions& options);

}  // namespace taskwire::bench
