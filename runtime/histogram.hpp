#pragma once
// runtime::DurationHistogram: counts of durations in fixed buckets (Prometheus' histogram
// type), cheap enough to update for every task: a short scan of constant bounds, no
// allocation. Not thread-safe: each one is updated from a single strand.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace taskwire::runtime {

class DurationHistogram {
 public:
  /// Upper bounds in seconds (le="..."); a last, implicit bucket is +Inf. Tasks span
  /// microseconds (inline functions) to minutes, so the bounds step by about 3x.
  static constexpr std::array<double, 14> kBounds{1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2,
                                                  3e-2, 0.1,  0.3,  1.0,  3.0,  10.0, 60.0};

  void observe(double seconds) noexcept {
    if (!(seconds >= 0) || !std::isfinite(seconds)) return;
    std::size_t i = 0;
    while (i < kBounds.size() && seconds > kBounds[i]) ++i;
    ++buckets_[i];
    ++count_;
    sum_ += seconds;
  }
  /// Observations at most kBounds[i] (i == kBounds.size(): all of them), as Prometheus'
  /// cumulative buckets.
  std::uint64_t cumulative(std::size_t i) const noexcept {
    std::uint64_t n = 0;
    for (std::size_t j = 0; j <= i && j < buckets_.size(); ++j) n += buckets_[j];
    return n;
  }
  std::uint64_t count() const noexcept { return count_; }
  double sum() const noexcept { return sum_; }

 private:
  std::array<std::uint64_t, kBounds.size() + 1> buckets_{};
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace taskwire::runtime
