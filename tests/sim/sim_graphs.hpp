#pragma once
// Random task graphs for the simulation and the value each task must produce. A task's
// "function" mixes its own seed with its inputs' values in argument order, so a result
// computed from a wrong, stale or missing input differs from the direct computation here.
#include "sim_random.hpp"

#include <taskwire/runtime/frame.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace taskwire::sim {

struct GraphTask {
  std::string key;
  std::vector<std::string> deps;  ///< in argument order
  std::uint64_t seed = 0;
  int retries = 0;
  bool always_fails = false;  ///< every run of it fails: it must end erred, and its dependents
};

struct Graph {
  std::string name;               ///< e.g. "g3-stencil"
  std::vector<GraphTask> tasks;   ///< dependencies before dependents
  std::vector<std::string> wanted;
  std::map<std::string, std::uint64_t> expected;  ///< every key's value, had nothing failed
  std::map<std::string, std::vector<std::string>> ancestors;  ///< of each wanted key, itself included
};

struct GraphOptions {
  double always_fail_rate = 0.01;  ///< per task
  int max_retries = 3;
};

/// A random chain, 1-D stencil, tree reduction or all-to-all graph; keys start with "g<index>-".
Graph make_graph(int index, Rng& rng, const GraphOptions& options);

/// The simulated function: the value of a task with this seed and these inputs.
std::uint64_t task_value(std::uint64_t seed, const std::vector<std::uint64_t>& inputs);

/// The inline argument a task is submitted with (its seed and whether it always fails), and
/// its reading.
runtime::Frame seed_frame(const GraphTask& t);
struct SeedArg {
  std::uint64_t seed = 0;
  bool always_fails = false;
};
SeedArg read_seed(const runtime::Frame& f);

runtime::Frame value_frame(std::uint64_t v);
/// The value in a result frame; a frame of the wrong size reads as a value no task makes.
std::uint64_t read_value(const runtime::Frame& f);

}  // namespace taskwire::sim
