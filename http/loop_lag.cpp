#include <taskwire/http/loop_lag.hpp>

namespace taskwire::http {

std::shared_ptr<LoopLagProbe> LoopLagProbe::start(asio::strand<asio::any_io_executor> strand,
                                                  std::chrono::milliseconds interval) {
  auto probe = std::make_shared<LoopLagProbe>(strand, interval);
  asio::post(strand, [probe] { probe->arm(); });
  return probe;
}

void LoopLagProbe::arm() {
  if (stopped_.load(std::memory_order_relaxed)) return;
  due_ = std::chrono::steady_clock::now() + interval_;
  timer_.expires_at(due_);
  timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec) return;
    const double lag =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - self->due_).count();
    self->last_.store(lag, std::memory_order_relaxed);
    if (lag > self->max_.load(std::memory_order_relaxed))
      self->max_.store(lag, std::memory_order_relaxed);
    self->arm();
  });
}

void LoopLagProbe::stop() {
  stopped_.store(true, std::memory_order_relaxed);
  asio::post(timer_.get_executor(), [self = shared_from_this()] { self->timer_.cancel(); });
}

}  // namespace taskwire::http
