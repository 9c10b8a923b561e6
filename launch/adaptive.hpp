#pragma once
// The adaptive policy of a job cluster (JobCluster::adapt), kept apart from I/O so that tests
// drive it with made-up loads and clocks: given what the scheduler holds, how many workers to
// keep. After Dask's Adaptive, with the hysteresis dask-jobqueue users ask for (its issues
// #190, #498, #701: workers released between two computations and requeued): more workers are
// asked for at once, fewer only once the load has asked for fewer throughout
// `release_after`, and never while any task is waiting to run.
#include <chrono>
#include <cstddef>
#include <limits>
#include <optional>

namespace taskwire::launch {

struct AdaptOptions {
  std::size_t minimum = 0;  ///< workers kept when there is nothing to do
  std::size_t maximum = std::numeric_limits<std::size_t>::max();  ///< workers at most
  /// How often the cluster looks at the scheduler's load and decides.
  std::chrono::milliseconds interval{1000};
  /// How long the load must ask for fewer workers, with no task pending, before any is
  /// released (Dask's `wait_count` times `interval`).
  std::chrono::milliseconds release_after{10'000};
};

/// What the scheduler holds at one moment (from Client::scheduler_info()).
struct Load {
  std::size_t runnable = 0;  ///< tasks processing on workers, queued, or waiting for a worker
  std::size_t waiting = 0;   ///< tasks waiting for their inputs
  std::size_t threads_per_worker = 1;
};

class AdaptivePolicy {
 public:
  using Clock = std::chrono::steady_clock;
  /// `current`: the workers the cluster holds (or asked for) when adapting starts.
  AdaptivePolicy(AdaptOptions options, std::size_t current);

  /// The workers to hold after seeing `load` at `now`.
  std::size_t target(const Load& load, Clock::time_point now);
  /// The workers the load alone asks for, within [minimum, maximum].
  std::size_t wanted(const Load& load) const;
  const AdaptOptions& options() const { return options_; }

 private:
  AdaptOptions options_;
  std::size_t current_;
  std::optional<Clock::time_point> fewer_since_;  ///< when the load began to ask for fewer
};

}  // namespace taskwire::launch
