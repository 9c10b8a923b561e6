#include <taskwire/client/progress.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <utility>

namespace taskwire {

namespace {
using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kRedraw{100};  // the bar's fastest redraw
constexpr std::size_t kBarWidth = 30;

// Only the standard streams can be told to be a terminal; any other stream is not one.
bool on_terminal(const std::ostream& out) {
  if (&out == &std::cerr || &out == &std::clog) return ::isatty(STDERR_FILENO) == 1;
  if (&out == &std::cout) return ::isatty(STDOUT_FILENO) == 1;
  return false;
}

std::string erred_part(std::size_t erred) {
  return erred ? fmt::format(", {} erred", erred) : std::string();
}
}  // namespace

ProgressReporter::ProgressReporter(ProgressReportOptions options, std::size_t total)
    : options_(std::move(options)), out_(options_.out ? *options_.out : std::cerr),
      total_(total) {
  using Style = ProgressReportOptions::Style;
  bar_ = options_.style == Style::bar ||
         (options_.style == Style::automatic && on_terminal(out_));
  start_ = last_write_ = now();
  if (bar_) draw_bar();
}

ProgressReporter::~ProgressReporter() {
  try {
    finish();
  } catch (...) {  // a stream that throws: nothing more to report on
  }
}

Clock::time_point ProgressReporter::now() const {
  return options_.clock ? options_.clock() : Clock::now();
}

void ProgressReporter::update(std::size_t done, std::size_t erred) {
  if (finished_) return;
  done_ = done;
  erred_ = erred;
  const auto since = now() - last_write_;
  if (bar_) {
    if (since >= kRedraw) draw_bar();  // also unchanged: the seconds go on
  } else if (since >= options_.interval) {
    write_line(false);
  }
}

void ProgressReporter::finish() {
  if (finished_) return;
  finished_ = true;
  if (!bar_) return write_line(true);
  draw_bar();
  break_line();
}

void ProgressReporter::break_line() {
  if (!bar_on_line_) return;
  out_ << '\n' << std::flush;
  bar_on_line_ = false;
}

void ProgressReporter::draw_bar() {
  last_write_ = now();
  const double seconds = std::chrono::duration<double>(last_write_ - start_).count();
  const std::size_t filled = total_ ? std::min(done_, total_) * kBarWidth / total_ : kBarWidth;
  out_ << fmt::format("\r[{}{}] {}/{} tasks{}, {:.1f} s", std::string(filled, '#'),
                      std::string(kBarWidth - filled, ' '), done_, total_, erred_part(erred_),
                      seconds)
       << std::flush;
  bar_on_line_ = true;
}

void ProgressReporter::write_line(bool final) {
  last_write_ = now();
  const double seconds = std::chrono::duration<double>(last_write_ - start_).count();
  std::string line;
  if (!final)
    line = fmt::format("{}: {}/{} tasks ({}%){}, {:.1f} s", options_.label, done_, total_,
                       total_ ? done_ * 100 / total_ : 100, erred_part(erred_), seconds);
  else if (done_ >= total_)
    line = fmt::format("{}: {}/{} tasks done{}, {:.1f} s", options_.label, done_, total_,
                       erred_part(erred_), seconds);
  else
    line = fmt::format("{}: stopped at {}/{} tasks{}, {:.1f} s", options_.label, done_, total_,
                       erred_part(erred_), seconds);
  // One write: under mpiexec stderr and stdout reach the terminal through separate pipes, and a
  // newline written apart from its line lands after whatever the other stream wrote meanwhile.
  line += '\n';
  out_ << line << std::flush;
}

namespace detail {

// Waits for the futures in order (they mostly finish so), and every kRedraw reads the status
// of every one still pending: the report's count, and futures done out of order.
ProgressCounts watch_futures(std::vector<Future<runtime::Frame>> futures,
                             const ProgressReportOptions& options) {
  ProgressCounts counts{futures.size(), 0, 0};
  ProgressReporter reporter(options, futures.size());
  while (!futures.empty()) {
    const auto sweep_at = Clock::now() + kRedraw;
    for (std::size_t head = 0; head < futures.size(); ++head) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(sweep_at - Clock::now());
      if (left.count() <= 0 || !futures[head].wait_for(left)) break;
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < futures.size(); ++i) {
      const auto status = futures[i].status();
      if (status == client::KeyStatus::pending) {
        if (kept != i) futures[kept] = std::move(futures[i]);
        ++kept;
        continue;
      }
      ++counts.done;
      if (status != client::KeyStatus::memory) ++counts.erred;
    }
    futures.resize(kept);
    reporter.update(counts.done, counts.erred);
  }
  reporter.finish();
  return counts;
}

}  // namespace detail
}  // namespace taskwire
