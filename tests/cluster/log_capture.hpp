#pragma once
// Captures what the process logs through spdlog's default logger while it lives, at a
// chosen level, and puts the previous default logger back at the end. Create it before the
// components whose lines it should see (and destroy it after them): swapping the default
// logger while other threads log is not safe.
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace taskwire::test {

class LogCapture {
 public:
  explicit LogCapture(spdlog::level::level_enum level, std::size_t max_lines = 100'000)
      : previous_(spdlog::default_logger()),
        sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(max_lines)) {
    auto logger = std::make_shared<spdlog::logger>("log-capture", sink_);
    logger->set_level(level);
    logger->set_pattern("[%l] %v");
    spdlog::set_default_logger(std::move(logger));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  /// Every line captured so far, each ending in a newline.
  std::string text() const {
    std::string all;
    for (const auto& line : sink_->last_formatted()) all += line;
    return all;
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace taskwire::test
