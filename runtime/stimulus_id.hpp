#pragma once
// Stimulus ids (after Dask's): what set a state machine's transitions going. An event that
// comes without one (most do) is named "<its kind>-<n>", n counting the machine's events.
// Both state machines (scheduler, worker) name theirs so.
#include <fmt/compile.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

namespace taskwire::runtime {

/// Sets `out` to `given`, or when that is empty to "<kind>-<++counter>", formatted in place:
/// this runs once per event, and reusing `out`'s capacity spares an allocation each time.
inline void set_stimulus_id(std::string& out, const std::string& given, std::string_view kind,
                            std::uint64_t& counter) {
  if (!given.empty()) {
    out = given;
    return;
  }
  out.clear();
  fmt::format_to(std::back_inserter(out), FMT_COMPILE("{}-{}"), kind, ++counter);
}

}  // namespace taskwire::runtime
