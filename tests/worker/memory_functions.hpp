#pragma once
// Functions of the worker memory test: compiled into the test (whose client submits them)
// and into a library the worker daemons --preload.
#include <cstdint>
#include <vector>

namespace taskwire::test {

/// Elements of a blob: 4 MiB of 64-bit words.
inline constexpr std::size_t kMemoryBlobWords = std::size_t{512} << 10;

/// A blob whose words follow from `seed`.
std::vector<std::uint64_t> memory_blob(long seed);
/// A checksum of a blob's words that depends on their order.
std::uint64_t memory_blob_checksum(std::vector<std::uint64_t> blob);

}  // namespace taskwire::test
