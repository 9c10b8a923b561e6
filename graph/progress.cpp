#include <taskwire/graph/progress.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace taskwire::graph::detail {

ProgressReporter::ProgressReporter(const ProgressOptions& options, std::size_t total)
    : options_(options), total_(total), bar_(options.bar && ::isatty(STDERR_FILENO) == 1) {
  draw(true);
}

ProgressReporter::~ProgressReporter() {
  if (drawn_) std::fputc('\n', stderr);
}

void ProgressReporter::update(std::size_t done) {
  if (done <= done_) return;
  const auto before = done_;
  done_ = done;
  if (options_.callback) options_.callback(Progress{done_, total_});
  bool force = done_ == total_;
  if (options_.log_every > 0 && done_ / options_.log_every != before / options_.log_every) {
    if (drawn_) std::fputc('\n', stderr);  // the log line below the bar, then the bar again
    spdlog::info("graph: {}/{} tasks done", done_, total_);
    force = true;
  }
  draw(force);
}

void ProgressReporter::draw(bool force) {
  if (!bar_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr std::size_t width = 40;
  const std::size_t filled = total_ ? done_ * width / total_ : width;
  fmt::print(stderr, "\r[{}{}] {}/{} tasks {:3}%", std::string(filled, '#'),
             std::string(width - filled, ' '), done_, total_, total_ ? done_ * 100 / total_ : 100);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace taskwire::graph::detail
