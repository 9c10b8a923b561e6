#include "memory_functions.hpp"

#include <taskwire/runtime/function_registry.hpp>

namespace taskwire::test {

std::vector<std::uint64_t> memory_blob(long seed) {
  std::vector<std::uint64_t> blob(kMemoryBlobWords);
  std::uint64_t x = static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ull + 1;
  for (auto& word : blob) {  // xorshift64: every word differs, no page is all zeros
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    word = x;
  }
  return blob;
}

std::uint64_t memory_blob_checksum(std::vector<std::uint64_t> blob) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < blob.size(); ++i) sum = sum * 31 + (blob[i] ^ i);
  return sum;
}

TASKWIRE_REGISTER(memory_blob);
TASKWIRE_REGISTER(memory_blob_checksum);

}  // namespace taskwire::test
