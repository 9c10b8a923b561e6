// PollDriver: where the MpiPoller's turns run (see mpi_poller.hpp).
#include <taskwire/comm/mpi/mpi_poller.hpp>

namespace taskwire::comm::mpi {

// ---- PollDriver --------------------------------------------------------------------------

PollDriver::PollDriver(std::shared_ptr<MpiPoller> poller, asio::any_io_executor executor,
                       runtime::MpiPollConfig config, bool own_thread)
    : poller_(std::move(poller)), strand_(asio::make_strand(executor)), timer_(strand_),
      context_(&asio::query(executor, asio::execution::context)), backoff_(config),
      deep_sleep_(config.sleep_cap * MpiPoller::kDeepIdleFactor), own_thread_(own_thread) {}

PollDriver::~PollDriver() {
  stopped_ = true;
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
    else thread_.join();
  }
}

void PollDriver::start() {
  poller_->attach(this);
  if (own_thread_) {
    thread_ = std::thread([this] { thread_loop(); });
    return;
  }
  asio::post(strand_, [self = shared_from_this()] { self->run(); });
}

void PollDriver::stop() noexcept {
  if (stopped_.exchange(true)) return;
  poller_->detach(this);
  try {
    if (own_thread_) {
      {
        std::lock_guard lock(sleep_mu_);
      }
      sleep_cv_.notify_all();
      if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
      return;
    }
    asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
  } catch (...) {
  }
}

void PollDriver::wake() noexcept {
  kicked_ = true;
  if (sleeping_.exchange(false)) {
    try {
      if (own_thread_) {
        {
          std::lock_guard lock(sleep_mu_);
        }
        sleep_cv_.notify_one();
        return;
      }
      asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
    } catch (...) {
    }
  }
}

std::chrono::microseconds PollDriver::next_wait(const TurnResult& r) {
  const auto now = MpiPoller::Clock::now();
  if (r.progress || kicked_.exchange(false)) {
    backoff_.reset();
    last_progress_ = now;
  }
  // Right after progress a reply is likely within a round trip or two: keep polling rather
  // than sleep, as a timer wake-up costs tens of us here.
  if (now - last_progress_ < MpiPoller::kSpinAfterProgress) return std::chrono::microseconds(0);
  // A rendezvous transfer moves only while both sides call into MPI: keep polling while
  // requests are in flight and something moved recently; a transfer stuck for longer (a
  // reader holding it back) falls back to the backoff, capped at kBusySleepCap.
  if (r.busy && now - last_progress_ < MpiPoller::kBusySpin) return std::chrono::microseconds(0);
  auto wait = backoff_.next();
  if (r.busy) return std::min(wait, MpiPoller::kBusySleepCap);
  // Long silence: each timer wake-up costs ~30 us of CPU on this VM (the task switch), so
  // 1000 a second alone would be 3 % of a core.
  if (now - last_progress_ >= MpiPoller::kDeepIdleAfter) wait = std::max(wait, deep_sleep_);
  return wait;
}

void PollDriver::thread_loop() {
  while (!stopped_) {
    const TurnResult r = poller_->turn();
    if (r.finished) return;
    const auto wait = next_wait(r);
    if (wait.count() == 0) continue;
    std::unique_lock lock(sleep_mu_);
    sleeping_ = true;
    sleep_cv_.wait_for(lock, wait, [this] { return kicked_.load() || stopped_.load(); });
    sleeping_ = false;
  }
}

void PollDriver::run() {
  if (stopped_) return;
  // Poll back to back, without a pass through the io_context (each pass costs an epoll_wait
  // system call, 1.8 us here), delivering inline, until a delivery found its strand busy
  // (it runs once the io_context gets its pass), the backoff says sleep, or kBurst is over:
  // other handlers on this io_context wait at most that long.
  const auto burst_end = MpiPoller::Clock::now() + MpiPoller::kBurst;
  std::chrono::microseconds wait{0};
  for (;;) {
    const TurnResult r = poller_->turn(context_);
    if (r.finished) return;  // MPI is shut down: nothing left to poll
    wait = next_wait(r);
    if (wait.count() > 0 || r.deferred || stopped_) break;
    if (MpiPoller::Clock::now() >= burst_end) break;
  }
  if (wait.count() > 0) {
    sleeping_ = true;
    if (kicked_.load()) {  // a wake() raced with the decision to sleep
      sleeping_ = false;
      wait = std::chrono::microseconds(0);
    }
  }
  auto self = shared_from_this();
  if (wait.count() == 0) {
    asio::post(strand_, [self] { self->run(); });
    return;
  }
  timer_.expires_after(wait);
  timer_.async_wait([self](error_code) {
    self->sleeping_ = false;
    self->run();
  });
}

}  // namespace taskwire::comm::mpi

