#pragma once
// Reports a graph's progress as ProgressOptions asks: a bar, a callback, periodic log lines.
#include <taskwire/graph/options.hpp>

#include <chrono>
#include <cstddef>

namespace taskwire::graph::detail {

class ProgressReporter {
 public:
  ProgressReporter(const ProgressOptions& options, std::size_t total);
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;
  ~ProgressReporter();  ///< ends the bar's line

  /// `done` tasks have finished (never decreasing).
  void update(std::size_t done);

 private:
  void draw(bool force);

  const ProgressOptions& options_;
  std::size_t total_;
  std::size_t done_ = 0;
  bool bar_ = false;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace taskwire::graph::detail
