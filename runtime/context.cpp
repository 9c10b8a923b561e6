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
    // A Drive kept across stop() and start() still has the loop: the new thread parks.
    drive_wanted_.store(driven_, std::memory_order_release);
  }
  for (unsigned i = 0; i < nthreads_; ++i) threads_.emplace_back([this] { run_thread(); });
}

template <class Run>
std::size_t Context::run_logged(Run run) {
  try {
    return run();
  } catch (const std::exception& e) {
    // A handler that throws is a bug in that handler; keep serving everyone else.
    spdlog::error("uncaught exception in an io handler: {}", e.what());
    return 1;
  }
}

void Context::run_thread() {
  if (!drivable_) {
    while (!io_.stopped()) run_logged([&] { return io_.run(); });
    return;
  }
  // Handler by handler, so that a Drive can take the loop between two.
  for (;;) {
    if (drive_wanted_.load(std::memory_order_acquire)) park();
    if (io_.stopped()) return;
    run_logged([&] { return io_.run_one(); });
  }
}

bool Context::Drive::run_one_until(std::chrono::steady_clock::time_point deadline) {
  return ctx_->run_logged([&] { return ctx_->io_.run_one_until(deadline); }) > 0;
}

bool Context::Drive::poll_one() {
  return ctx_->run_logged([&] { return ctx_->io_.poll_one(); }) > 0;
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

}  // namespace taskwire::runtime
