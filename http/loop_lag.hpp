#pragma once
// taskwire::http::LoopLagProbe: how late a timer on a daemon's strand fires, i.e. how long
// a handler posted there waits behind others (Dask's "event loop lag"). One timer per
// interval: nothing on the strand's hot path. Readable from any thread (relaxed atomics).
#include <taskwire/runtime/asio.hpp>

#include <atomic>
#include <chrono>
#include <memory>

namespace taskwire::http {

class LoopLagProbe : public std::enable_shared_from_this<LoopLagProbe> {
 public:
  /// Starts probing `strand` every `interval`; stops when stop() is called.
  static std::shared_ptr<LoopLagProbe> start(asio::strand<asio::any_io_executor> strand,
                                             std::chrono::milliseconds interval);
  void stop();  ///< any thread
  double last_seconds() const noexcept { return last_.load(std::memory_order_relaxed); }
  double max_seconds() const noexcept { return max_.load(std::memory_order_relaxed); }

  LoopLagProbe(asio::strand<asio::any_io_executor> strand, std::chrono::milliseconds interval)
      : timer_(strand), interval_(interval) {}

 private:
  void arm();
  asio::steady_timer timer_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point due_{};
  std::atomic<double> last_{0}, max_{0};
  std::atomic<bool> stopped_{false};
};

}  // namespace taskwire::http
