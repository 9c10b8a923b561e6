#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace taskwire::bench {

struct UnevenOptions {
  std::vector<std::string> backends{"tcp"};  ///< tcp, inproc
  int workers = 4;                           ///< single-thread workers
  int tasks = 2'000;
  double median_ms = 2.0;  ///< median task duration
  double sigma = 1.0;      ///< of the duration's logarithm
  std::uint64_t seed = 1;  ///< the same seed gives the same durations
  /// "sleep": a task sleeps its duration (many workers on few cores still overlap);
  /// "spin": it burns CPU that long (honest about CPU, but needs a core per worker).
  std::string work = "sleep";
  int repeats = 3;  ///< runs on one cluster, the same durations each time; medians reported
  /// One more task that takes this long, submitted before the others (0: none): a stuck or
  /// very slow task must not hold other tasks while a worker idles.
  double stuck_seconds = 0;
  std::string csv;
};

/// Independent tasks of lognormal durations on single-thread workers in this process: the
/// makespan (submit to last result) against the lower bound max(total work / threads, longest
/// task), medians over the repeats. Returns an exit code.
int run_uneven(const UnevenOptions& options);

}  // namespace taskwire::bench
