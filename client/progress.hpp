#pragma once
// taskwire::progress(futures): reports how many of a set of futures are done, until all are
// (after dask.distributed.progress). On a terminal, a bar redrawn in place:
//   [##########                    ] 512/1000 tasks, 3 erred, 12.3 s
// anywhere else (a pipe, a file, a job under mpiexec), a line at most every `interval`, then a
// final one:
//   progress: 512/1000 tasks (51%), 3 erred, 12.3 s
//   progress: 1000/1000 tasks done, 3 erred, 20.1 s
// graph::execute's progress report (graph/options.hpp) uses the same ProgressReporter.
// Thread-safety: a ProgressReporter belongs to one thread; progress() may be called from any.
#include <taskwire/client/client.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace taskwire {

struct ProgressReportOptions {
  enum class Style {
    automatic,  ///< a bar when `out` is std::cerr or std::cout on a terminal, else lines
    bar,        ///< always the redrawn bar
    lines,      ///< always lines
  };
  Style style = Style::automatic;
  /// Where the report goes; null: std::cerr. Must outlive the report.
  std::ostream* out = nullptr;
  /// Lines: at most one per interval, plus the final line. The bar is redrawn at most every
  /// 100 ms whatever this says.
  std::chrono::milliseconds interval{5000};
  std::string label = "progress";  ///< what starts each line
  /// The clock the elapsed time and the interval are read on; empty: steady_clock::now. Tests
  /// set one so that the report does not depend on how fast the machine is.
  std::function<std::chrono::steady_clock::time_point()> clock{};
};

/// How a progress() call ended: `done` of `total` finished, `erred` of them without a result
/// (erred, cancelled or lost).
struct ProgressCounts {
  std::size_t total = 0;
  std::size_t done = 0;
  std::size_t erred = 0;
};

/// Writes the bar or the lines for a count of tasks it is told about (update()).
class ProgressReporter {
 public:
  ProgressReporter(ProgressReportOptions options, std::size_t total);
  ~ProgressReporter();  ///< finish(), if not done yet
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  /// `done` tasks have finished, `erred` of them without a result. Writes what is due: a
  /// redraw of the bar, or a line once `interval` has passed since the last one.
  void update(std::size_t done, std::size_t erred = 0);
  /// The final line, or the bar's last redraw and the end of its line. Once; later calls
  /// and update() do nothing.
  void finish();
  /// Ends the bar's line so that something else can be written below it; the next redraw
  /// starts a new one. Nothing to do for lines.
  void break_line();
  bool draws_bar() const noexcept { return bar_; }

 private:
  std::chrono::steady_clock::time_point now() const;
  void draw_bar();
  void write_line(bool final);

  ProgressReportOptions options_;
  std::ostream& out_;
  std::size_t total_;
  std::size_t done_ = 0, erred_ = 0;
  bool bar_ = false;
  bool bar_on_line_ = false;  ///< the cursor is at the end of a drawn bar
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_write_;
};

namespace detail {
/// progress()'s loop: waits for `futures` and reports how many are done.
ProgressCounts watch_futures(std::vector<Future<runtime::Frame>> futures,
                             const ProgressReportOptions& options);
}  // namespace detail

/// Reports the progress of `futures` (see the top of this file) and returns once every one
/// is done, successfully or not (erred, cancelled, lost all count as done). Throws
/// std::logic_error for an empty future among them.
template <class T>
ProgressCounts progress(const std::vector<Future<T>>& futures, const ProgressReportOptions& options) {
  std::vector<Future<runtime::Frame>> untyped;
  untyped.reserve(futures.size());
  for (const auto& f : futures) {
    (void)f.key();  // an empty future throws here, before any report is written
    untyped.push_back(f.template as<runtime::Frame>());
  }
  return detail::watch_futures(std::move(untyped), options);
}
template <class T>
ProgressCounts progress(const std::vector<Future<T>>& futures) {
  return progress(futures, ProgressReportOptions{});
}

}  // namespace taskwire
