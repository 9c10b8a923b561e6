#pragma once
// Options of graph::execute, its progress report, and the error naming a failed map input.
#include <taskwire/client/future.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace taskwire::graph {

/// Tasks of the graph finished so far: map tasks (chunks), plus reduce nodes run in the cluster.
struct Progress {
  std::size_t done = 0;
  std::size_t total = 0;
};

struct ProgressOptions {
  /// Report on `out` as taskwire::progress does (client/progress.hpp): a bar redrawn in place
  /// on a terminal, otherwise (a pipe, a file, a job under mpiexec) a line every `interval`
  /// while tasks finish, and a final one.
  bool bar = false;
  std::chrono::milliseconds interval{5000};  ///< between lines, when not on a terminal
  std::ostream* out = nullptr;               ///< null: std::cerr
  /// Called on execute's thread each time `done` grows (several tasks may finish between calls).
  std::function<void(const Progress&)> callback{};
  std::size_t log_every = 0;  ///< an info log line every this many finished tasks; 0: none
};

struct ExecuteOptions {
  /// At most this many map tasks submitted and not yet finished; 0 (default): all at once, the
  /// scheduler then hands them to workers as they free up. Either way no task is bound to a
  /// worker in advance, so tasks of uneven duration balance themselves.
  std::size_t max_workers = 0;
  /// Inputs per map task (default 1). One task runs fn over each input of its chunk, in order:
  /// it amortises the per-task cost for tiny tasks. Must be >= 1.
  std::size_t chunksize = 1;
  /// true (default): reduce nodes run as cluster tasks, where the data already is; false: every
  /// map result is gathered to the client and combined there (same combine calls, same order).
  bool reduce_in_pool = true;
  /// In the pool, each reduce task runs the combine calls of a subtree at most this many levels
  /// high (default 3: up to 7 calls over 8 results of a binary tree), the same calls in the same
  /// order as one task per call, with far fewer tasks to schedule and results to move: cheap
  /// combines want it (README, "Map/reduce graphs"). 1: one task per combine call, the most parallel, for costly combines. >= 1.
  std::size_t reduce_fuse_levels = 3;
  ProgressOptions progress{};
  /// Every task of the graph runs with this priority (SubmitOptions::priority: higher first,
  /// ahead of earlier graphs of lower priority). Default 0.
  std::int32_t priority = 0;
  /// Times each task runs again after it throws or its worker dies (SubmitOptions::retries).
  std::uint32_t retries = 0;
  /// Every task of the graph runs under these restrictions (SubmitOptions::resources,
  /// workers, allow_other_workers).
  std::map<std::string, double> resources = {};
  std::vector<std::string> workers = {};
  bool allow_other_workers = false;
  /// > 0: once execute has its result, arm force_exit_after(exit_after_seconds) so that a
  /// run-once batch program whose teardown then hangs still exits (status 124). 0: off.
  double exit_after_seconds = 0;
};

/// A map task threw: names the input (its index in the graph's input list) and the message.
class MapError : public TaskError {
 public:
  MapError(std::string key, std::size_t input, std::string message);
  std::size_t input() const noexcept { return input_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::size_t input_;
  std::string what_;
};

}  // namespace taskwire::graph
