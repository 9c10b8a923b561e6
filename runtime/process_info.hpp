#pragma once
// What a worker tells the scheduler about its process: its host and the memory it holds, as
// the operating system counts it (Linux /proc).
#include <cstdint>
#include <string>

namespace taskwire::runtime {

/// Resident set size of this process in bytes (/proc/self/statm); 0 when it cannot be read.
/// Reads a small file: cheap enough for a heartbeat, not for a hot loop.
std::uint64_t resident_set_bytes() noexcept;

/// This machine's host name (gethostname); empty when it cannot be read.
std::string host_name();

}  // namespace taskwire::runtime
