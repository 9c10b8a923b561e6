#pragma once
// Functions of the worker memory test: compiled into the test (whose client submits them)
// and into a library the worker daemons --preload.
#include <cstdint>
#include <vector>

namespace taskwire::test {

/// Elements of a blob: 64-bit words, one fewer than 4 MiB of them, so that with its length
/// prefix the result frame is 4 MiB exactly. One word more and jemalloc serves the frame
/// from its 5 MiB size class, whose last touched 2 MiB huge page makes 6 MiB resident for
/// 4 MiB of managed data (docs/scheduling.md, "Memory").
inline constexpr std::size_t kMemoryBlobWords = (std::size_t{512} << 10) - 1;

/// A blob whose words follow from `seed`.
std::vector<std::uint64_t> memory_blob(long seed);
/// A checksum of a blob's words that depends on their order.
std::uint64_t memory_blob_checksum(std::vector<std::uint64_t> blob);

}  // namespace taskwire::test
