#pragma once
// The programs launched by tests/launch report every check as a line run_expect.cmake and
// ctest's FAIL_REGULAR_EXPRESSION read: "CHECKED <what>" or "FAILED <what>".
#include <fmt/format.h>

#include <cstdio>
#include <string>

namespace launch_checks {

inline int failures = 0;

inline void check(bool ok, const std::string& what) {
  fmt::print("{} {}\n", ok ? "CHECKED" : "FAILED", what);
  std::fflush(stdout);
  if (!ok) ++failures;
}

}  // namespace launch_checks
