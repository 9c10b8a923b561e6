#pragma once
// Reports a graph's progress as ProgressOptions asks: a callback, periodic log lines, and the
// bar or lines of taskwire::ProgressReporter (client/progress.hpp).
#include <taskwire/client/progress.hpp>
#include <taskwire/graph/options.hpp>

#include <cstddef>
#include <optional>

namespace taskwire::graph::detail {

class GraphProgress {
 public:
  GraphProgress(const ProgressOptions& options, std::size_t total);
  GraphProgress(const GraphProgress&) = delete;
  GraphProgress& operator=(const GraphProgress&) = delete;

  /// `done` tasks have finished (never decreasing); called also when none did, so that the
  /// report goes on in time.
  void update(std::size_t done);
  /// Every task is done: the final line (or the bar's last redraw).
  void finish();

 private:
  const ProgressOptions& options_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::optional<ProgressReporter> display_;  // when options.bar
};

}  // namespace taskwire::graph::detail
