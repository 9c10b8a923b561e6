#pragma once
// Runs this test executable again as a child (to run one hidden test case that is expected to
// end the process), with a hard time limit, and captures what it wrote.
#include <chrono>
#include <string>
#include <vector>

namespace taskwire::test {

struct ChildResult {
  bool exited = false;  ///< ended by exit (not a signal, not killed for the time limit)
  int status = -1;      ///< its exit status when `exited`
  bool killed = false;  ///< still running at the limit, so killed
  std::string output;   ///< stdout and stderr together
};

/// Runs /proc/self/exe with `args`; kills it after `limit`.
ChildResult run_self(const std::vector<std::string>& args, std::chrono::seconds limit);

}  // namespace taskwire::test
