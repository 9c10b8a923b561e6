#pragma once
// Helpers shared by the MpiPoller's translation units (not part of any interface).
#include <taskwire/comm/mpi/mpi_environment.hpp>

#include <cstdint>
#include <string>

namespace taskwire::comm::mpi::detail {

inline constexpr int kMaxProbesPerTurn = 64;
inline constexpr unsigned kChunkWindow = 16;  // chunk Isends of one message in flight at once

inline std::uint64_t route_key(int source, int tag) {
  return (std::uint64_t{static_cast<std::uint32_t>(source)} << 32) |
         static_cast<std::uint32_t>(tag);
}

inline std::string mpi_text(int rc) { return MpiEnvironment::error_string(rc); }

}  // namespace taskwire::comm::mpi::detail
