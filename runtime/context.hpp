#pragma once
// runtime::Context: one per process (or per independent component in tests). Owns the
// io_context every comm, timer and server of that component runs on, the threads that run
// it, and the configuration. Thread-safety: all members are safe to call from any thread.
#include <taskwire/runtime/asio.hpp>
#include <taskwire/runtime/config.hpp>

#include <optional>
#include <thread>
#include <vector>

namespace taskwire::runtime {

class Context {
 public:
  /// `threads` is how many threads start() runs the io_context on (at least 1).
  explicit Context(Config config = Config::from_env(), unsigned threads = 1);
  ~Context();  ///< stop() and join
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  asio::io_context& io() noexcept { return io_; }
  asio::any_io_executor executor() noexcept { return io_.get_executor(); }
  const Config& config() const noexcept { return config_; }
  Config& mutable_config() noexcept { return config_; }  ///< before start() only

  /// Starts the threads (idempotent). The io_context keeps running while idle.
  void start();
  /// Lets the threads finish: stops the io_context and joins them. Idempotent.
  /// Must not be called from one of the context's own threads.
  void stop();
  bool running_in_this_thread() noexcept { return io_.get_executor().running_in_this_thread(); }

 private:
  Config config_;
  unsigned nthreads_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::vector<std::thread> threads_;
};

}  // namespace taskwire::runtime
