#pragma once
// splitmix64: fast, and good enough for a benchmark's uniform doubles in [0, 1); the same seed
// gives the same numbers on any rank.
#include <cstdint>

namespace taskwire::bench {

inline std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace taskwire::bench
