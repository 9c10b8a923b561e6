#include <taskwire/runtime/context.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::runtime {
asio::execution_context::id UrgentWork::id;

Context::Context(Config config, unsigned threads)
    : config_(std::move(config)), nthreads_(threads ? threads : 1),
      io_(static_cast<int>(nthreads_)),
      // Registered now, the count outlives the services registered later (strands, sockets,
      // timers), whose shutdown may destroy handlers holding a token.
      urgent_(&UrgentWork::of(io_)) {}

Context::~Context() { stop(); }

void Context::start() {
  if (!threads_.empty()) return;
  if (io_.stopped()) io_.restart();
  guard_.emplace(io_.get_executor());
  {
    std::lock_guard lock(park_mu_);
    started_ = true;
  }
  for (unsigned i = 0; i < nthreads_; ++i) threads_.emplace_back([this] { run_thread(); });
}

void Context::run_thread() {
  for (;;) {
    try {
      if (nthreads_ > 1) {
        io_.run();
        return;
      }
      // One thread: handler by handler, so that a Drive can take the loop between two.
      for (;;) {
        if (drive_wanted_.load(std::memory_order_acquire)) park();
        if (io_.stopped()) return;
        io_.run_one();
      }
    } catch (const std::exception& e) {
      // A handler that throws is a bug in that handler; keep serving everyone else.
      spdlog::error("uncaught exception in an io handler: {}", e.what());
    }
  }
}

void Context::stop() {
  guard_.reset();
  io_.stop();
  {
    std::lock_guard lock(park_mu_);
    started_ = false;
  }
  park_cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

// Parked while driven, then for linger_ after the Drive ends. The Drive's end does not wake
// this thread (that would cost the wake-up a linger saves): while driven, it looks again
// every linger_, doubling while the same Drive lasts (a long get() costs a few wake-ups), and
// a Drive that ends long before this thread's next look wakes it (~Drive).
void Context::park() {
  constexpr std::chrono::milliseconds kLongestLook{100};
  std::unique_lock lock(park_mu_);
  parked_ = true;
  park_cv_.notify_all();
  auto period = linger_;
  auto seen = drives_;
  for (;;) {
    if (!started_) break;
    const auto now = Clock::now();
    if (!driven_) {
      if (now >= linger_until_) break;
      wakes_at_ = linger_until_;
    } else if (linger_.count() == 0) {
      wakes_at_ = Clock::time_point::max();
    } else {
      if (drives_ != seen) {
        seen = drives_;
        period = linger_;
      }
      wakes_at_ = now + period;
      period = std::min<std::chrono::microseconds>(period * 2, kLongestLook);
    }
    if (wakes_at_ == Clock::time_point::max()) park_cv_.wait(lock);
    else park_cv_.wait_until(lock, wakes_at_);
  }
  wakes_at_ = Clock::time_point::max();
  parked_ = false;
  drive_wanted_.store(false, std::memory_order_release);
}

std::optional<Context::Drive> Context::try_drive() {
  if (nthreads_ != 1 || running_in_this_thread()) return std::nullopt;
  std::unique_lock lock(park_mu_);
  if (!started_ || driven_) return std::nullopt;
  driven_ = true;
  ++drives_;
  if (parked_) return Drive(*this);  // still lingering after the last Drive
  drive_wanted_.store(true, std::memory_order_release);
  // The own thread may wait for a handler in the reactor: give it one, so that it returns
  // (urgent: the MPI poller ends its burst too). Whoever runs first runs it.
  post_urgent(*urgent_, io_.get_executor(), [] {});
  park_cv_.wait(lock, [&] { return parked_ || !started_; });
  if (!started_) {
    driven_ = false;
    return std::nullopt;
  }
  return Drive(*this);
}

Context::Drive::~Drive() {
  if (!ctx_) return;
  bool wake = true;
  {
    std::lock_guard lock(ctx_->park_mu_);
    ctx_->driven_ = false;
    const auto now = Clock::now();
    if (ctx_->linger_.count() > 0 && ctx_->wakes_at_ <= now + 2 * ctx_->linger_) {
      ctx_->linger_until_ = now + ctx_->linger_;
      wake = false;  // it looks again soon enough, and lingers until then
    } else {
      ctx_->linger_until_ = now;
    }
  }
  if (wake) ctx_->park_cv_.notify_all();
}

void Context::end_linger() {
  {
    std::lock_guard lock(park_mu_);
    if (driven_ || !parked_ || linger_until_ <= Clock::now()) return;
    linger_until_ = Clock::time_point{};
  }
  park_cv_.notify_all();
}

bool Context::Drive::run_one_until(std::chrono::steady_clock::time_point deadline) {
  try {
    return ctx_->io_.run_one_until(deadline) > 0;
  } catch (const std::exception& e) {  // as on the context's own thread
    spdlog::error("uncaught exception in an io handler: {}", e.what());
    return true;
  }
}

}  // namespace taskwire::runtime
