#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace taskwire::bench {

struct HeldOptions {
  std::vector<std::string> backends{"tcp"};  ///< tcp, inproc (alone); mpi, tcp (under mpiexec)
  std::size_t bytes = std::size_t{8} << 20;  ///< the held std::vector<double>
  int reads = 200;                           ///< submit-get round trips per measurement
  int copies = 20;                           ///< of those, by-value reads (one copy each)
  int repeats = 5;                           ///< measurements (the median is reported)
  std::string csv;
};

/// A task reading one element of a std::vector<double> its worker holds, against a no-op
/// task's round trip measured in the same run, on one single-thread worker: the vector held
/// as a task there returned it, and as scattered bytes (decoded by its first reader); and,
/// for scale, a task taking the vector by value (one copy per run). Each read is timed right
/// after a no-op round trip; prints, per case, the median over the measurements of the
/// median round trip and of the median excess over its no-op; appends CSV rows
/// backend,case,bytes,us_per_roundtrip,us_over_noop.
/// Returns an exit code (1 if a read returned a wrong element).
int run_held(const HeldOptions& options);

}  // namespace taskwire::bench
