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
        if (drive_wanted_.load(std::memory_order_acquire)) {
          std::unique_lock lock(park_mu_);
          parked_ = true;
          park_cv_.notify_all();
          park_cv_.wait(lock, [&] { return !driven_ || !started_; });
          parked_ = false;
        }
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

std::optional<Context::Drive> Context::try_drive() {
  if (nthreads_ != 1 || running_in_this_thread()) return std::nullopt;
  std::unique_lock lock(park_mu_);
  if (!started_ || driven_) return std::nullopt;
  driven_ = true;
  drive_wanted_.store(true, std::memory_order_release);
  // The own thread may wait for a handler in the reactor: give it one, so that it returns
  // (urgent: the MPI poller ends its burst too). Whoever runs first runs it.
  post_urgent(*urgent_, io_.get_executor(), [] {});
  park_cv_.wait(lock, [&] { return parked_ || !started_; });
  if (!started_) {
    driven_ = false;
    drive_wanted_.store(false, std::memory_order_release);
    return std::nullopt;
  }
  return Drive(*this);
}

Context::Drive::~Drive() {
  if (!ctx_) return;
  {
    std::lock_guard lock(ctx_->park_mu_);
    ctx_->driven_ = false;
    ctx_->drive_wanted_.store(false, std::memory_order_release);
  }
  ctx_->park_cv_.notify_all();
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
