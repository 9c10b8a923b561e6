#include <taskwire/graph/progress.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::graph::detail {

namespace {
ProgressReportOptions display_options(const ProgressOptions& options) {
  ProgressReportOptions o;
  o.out = options.out;
  o.interval = options.interval;
  o.label = "graph";
  return o;
}
}  // namespace

GraphProgress::GraphProgress(const ProgressOptions& options, std::size_t total)
    : options_(options), total_(total) {
  if (options.bar) display_.emplace(display_options(options), total);
}

void GraphProgress::update(std::size_t done) {
  if (done > done_) {
    const auto before = done_;
    done_ = done;
    if (options_.callback) options_.callback(Progress{done_, total_});
    if (options_.log_every > 0 && done_ / options_.log_every != before / options_.log_every) {
      if (display_) display_->break_line();  // the log line below the bar, then the bar again
      spdlog::info("graph: {}/{} tasks done", done_, total_);
    }
  }
  if (display_) display_->update(done_);
}

void GraphProgress::finish() {
  if (display_) display_->finish();
}

}  // namespace taskwire::graph::detail
