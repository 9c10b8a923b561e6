#pragma once
// The simulation's only source of randomness: a seeded SplitMix64. The standard
// distributions are not used because their output differs between library versions, and a
// failing seed must replay the same run everywhere.
#include <cstdint>
#include <cstddef>
#include <vector>

namespace taskwire::sim {

/// SplitMix64's finaliser: a good 64-bit mix, also used to derive task values and sub-seeds.
inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return mix64(state_++); }
  /// Uniform in [0, n); n > 0.
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  /// Uniform in [lo, hi].
  int between(int lo, int hi) { return lo + static_cast<int>(below(static_cast<std::size_t>(hi - lo + 1))); }
  /// Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
  bool chance(double p) { return unit() < p; }
  /// Index drawn with the given (non-negative, not all zero) weights.
  std::size_t weighted(const std::vector<double>& weights) {
    double total = 0;
    for (double w : weights) total += w;
    double x = unit() * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }
  /// A fresh generator for a sub-stream (graphs, faults), so that adding draws to one part of
  /// the harness does not shift every other part.
  Rng fork() { return Rng(next()); }

 private:
  std::uint64_t state_;
};

}  // namespace taskwire::sim
