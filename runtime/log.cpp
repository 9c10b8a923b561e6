#include <taskwire/runtime/log.hpp>

#include <taskwire/runtime/launch_env.hpp>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <unistd.h>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace taskwire::runtime {
namespace {

void replace_all(std::string& s, const std::string& what, const std::string& with) {
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + with.size()))
    s.replace(p, what.size(), with);
}

}  // namespace

int launcher_rank() { return launch_position().rank; }

std::string log_pattern(int rank) {
  if (rank < 0) return "[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v";
  return fmt::format("[%Y-%m-%d %H:%M:%S.%e] [rank {}] [%^%l%$] %v", rank);
}

void init_logging(const LogOptions& options) {
  auto level = spdlog::level::from_str(options.level);
  if (level == spdlog::level::off && options.level != "off")
    throw std::invalid_argument("unknown log level '" + options.level +
                                "' (use trace, debug, info, warn, error, critical or off)");
  const auto position = launch_position();
  const int rank = options.rank >= 0 ? options.rank : position.rank;
  // A process no launcher started (a daemon run by hand) has no rank worth showing.
  const int shown_rank = options.rank >= 0 || position.launched ? rank : -1;
  std::vector<spdlog::sink_ptr> sinks{std::make_shared<spdlog::sinks::stderr_color_sink_mt>()};
  if (!options.file.empty()) {
    std::string path = options.file;
    replace_all(path, "{rank}", std::to_string(rank));
    replace_all(path, "{pid}", std::to_string(::getpid()));
    try {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, !options.append));
    } catch (const spdlog::spdlog_ex& e) {
      throw std::runtime_error("cannot open log file '" + path + "': " + e.what());
    }
  }
  auto logger = std::make_shared<spdlog::logger>("taskwire", sinks.begin(), sinks.end());
  logger->set_level(level);
  logger->set_pattern(log_pattern(shown_rank));
  // A crashed or killed process keeps what it logged: warnings and errors reach the file at
  // once, everything else within a second (the file sink buffers; an unflushed buffer dies
  // with the process).
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));  // also registers it for flush_every
  spdlog::flush_every(kLogFlushInterval);
}

}  // namespace taskwire::runtime
