#pragma once
// taskwire-bench bandwidth: a one-way stream from rank 0 to rank 1 of an mpiexec launch.
// Rank 0 sends windows of N messages back to back, then waits for one small ack from rank 1;
// each window is announced by a 16-byte header (N, size) so the receiver needs no plan.
// Backends in the same run, between the same two processes:
//   mpi      the MPI backend through the Comm interface
//   raw-mpi  MPI_Isend window / MPI_Irecv window on MPI_COMM_WORLD, then MPI_Send ack (the floor)
//   tcp      the TCP backend through the Comm interface (rank 1 listens on 127.0.0.1, or on
//            its host's address when the ranks are on different hosts)
//   raw-tcp  blocking sockets (the floor for tcp)
#include <cstddef>
#include <string>
#include <vector>

namespace taskwire::bench {

struct BandwidthOptions {
  std::vector<std::string> backends{"mpi", "raw-mpi", "tcp", "raw-tcp"};
  std::vector<std::size_t> sizes;  ///< bytes per message (default 64 KiB .. 64 MiB, x4)
  /// Messages per window: window_bytes / size, clamped to [2, 64].
  std::size_t window_bytes = std::size_t{64} << 20;
  double seconds_per_size = 0.3;  ///< time budget per size, after one warm-up window
  std::size_t min_windows = 2;    ///< measured windows per size, whatever the budget
  std::string csv;                ///< rows backend,bytes,messages,seconds,gb_per_s
};

std::vector<std::size_t> default_bandwidth_sizes();

/// Collective over the MPI job (at least 2 ranks); rank 0 prints the table and the ratios.
/// Returns an exit code.
int run_bandwidth(const BandwidthOptions& options);

}  // namespace taskwire::bench
