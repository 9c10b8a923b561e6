#include <taskwire/launch/adaptive.hpp>

#include <algorithm>

namespace taskwire::launch {

AdaptivePolicy::AdaptivePolicy(AdaptOptions options, std::size_t current)
    : options_(options), current_(std::clamp(current, options.minimum, options.maximum)) {}

std::size_t AdaptivePolicy::wanted(const Load& load) const {
  const std::size_t per = std::max<std::size_t>(1, load.threads_per_worker);
  std::size_t n = (load.runnable + per - 1) / per;
  // Tasks waiting only for inputs that nothing computes would wait forever without one.
  if (n == 0 && load.waiting > 0) n = 1;
  return std::clamp(n, options_.minimum, options_.maximum);
}

std::size_t AdaptivePolicy::target(const Load& load, Clock::time_point now) {
  const std::size_t want = wanted(load);
  const bool pending = load.runnable > 0 || load.waiting > 0;
  if (want >= current_ || pending) {
    // Up at once; and while work is pending, nothing is released (a worker it frees now is
    // one the next wave of tasks would ask for again).
    current_ = std::max(current_, want);
    fewer_since_.reset();
    return current_;
  }
  if (!fewer_since_) fewer_since_ = now;
  if (now - *fewer_since_ >= options_.release_after) {
    current_ = want;
    fewer_since_.reset();
  }
  return current_;
}

}  // namespace taskwire::launch
