// Context::Drive, Context::Awake and the own thread's parking (see context.hpp).
#include <taskwire/runtime/context.hpp>
#include <taskwire/runtime/park_clock.hpp>

#include <algorithm>
#include <atomic>

namespace taskwire::runtime {
namespace {
constexpr std::chrono::milliseconds kLongestLook{100};
constexpr std::chrono::milliseconds kLongestLingers{10};
constexpr std::chrono::seconds kMostLinger{1};

std::atomic<ParkClock*> g_park_clock{nullptr};  // null: steady_clock

std::chrono::steady_clock::time_point park_now() {
  ParkClock* clock = g_park_clock.load(std::memory_order_acquire);
  return clock ? clock->now() : std::chrono::steady_clock::now();
}

void park_wait(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               std::chrono::steady_clock::time_point until) {
  if (ParkClock* clock = g_park_clock.load(std::memory_order_acquire))
    return clock->wait_until(cv, lock, until);
  if (until == std::chrono::steady_clock::time_point::max()) cv.wait(lock);
  else cv.wait_until(lock, until);
}
}  // namespace

void set_park_clock(ParkClock* clock) noexcept {
  g_park_clock.store(clock, std::memory_order_release);
}

void Context::enable_driving(std::chrono::microseconds linger) noexcept {
  drivable_ = nthreads_ == 1;
  linger_ = std::clamp<std::chrono::microseconds>(linger, std::chrono::microseconds(0), kMostLinger);
}

// Parked while driven, then for linger_ after the Drive ends. The Drive's end does not wake
// this thread (that would cost the wake-up a linger saves): while driven, it looks again
// every linger_, doubling while the same Drive lasts (a long get() costs a few wake-ups), and
// a Drive that ends long before this thread's next look wakes it (~Drive).
void Context::park() {
  std::unique_lock lock(park_mu_);
  parked_ = true;
  parked_since_ = park_now();
  park_cv_.notify_all();
  auto period = linger_;
  auto seen = drives_;
  for (;;) {
    if (!started_) break;
    const auto now = park_now();
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
    park_wait(park_cv_, lock, wakes_at_);
  }
  wakes_at_ = Clock::time_point::max();
  parked_ = false;
  drive_wanted_.store(false, std::memory_order_release);
}

std::optional<Context::Drive> Context::try_drive(std::chrono::steady_clock::time_point deadline) {
  if (!drivable_ || running_in_this_thread()) return std::nullopt;
  std::unique_lock lock(park_mu_);
  if (!started_ || driven_) return std::nullopt;
  driven_ = true;
  ++drives_;
  if (parked_) return Drive(*this);  // still lingering after the last Drive
  drive_wanted_.store(true, std::memory_order_release);
  auto give_up = [&] {
    driven_ = false;
    drive_wanted_.store(false, std::memory_order_release);
    lock.unlock();
    park_cv_.notify_all();
    return std::nullopt;
  };
  try {
    // The own thread may wait for a handler in the reactor: give it one, so that it returns
    // (urgent: the MPI poller ends its burst too). Whoever runs first runs it.
    post_urgent(*urgent_, io_.get_executor(), [] {});
  } catch (...) {
    give_up();
    throw;
  }
  const bool parked = park_cv_.wait_until(lock, deadline, [&] { return parked_ || !started_; });
  if (!parked || !started_) return give_up();
  return Drive(*this);
}

Context::Drive::~Drive() {
  if (!ctx_) return;
  bool wake = true;
  {
    std::lock_guard lock(ctx_->park_mu_);
    ctx_->driven_ = false;
    const auto now = park_now();
    // Linger if no one waits for the own thread, it looks again soon enough, and lingers in
    // a row have not kept it parked for long (Drives that run nothing, a wait_for(0) loop,
    // must not keep the loop unserved).
    if (ctx_->linger_.count() > 0 && ctx_->awake_ == 0 &&
        ctx_->wakes_at_ <= now + 2 * ctx_->linger_ && now < ctx_->parked_since_ + kLongestLingers) {
      ctx_->linger_until_ = now + ctx_->linger_;
      wake = false;
    } else {
      ctx_->linger_until_ = now;
    }
  }
  if (wake) ctx_->park_cv_.notify_all();
}

Context::Awake Context::keep_awake() {
  bool wake = false;
  {
    std::lock_guard lock(park_mu_);
    ++awake_;
    if (parked_ && !driven_) {  // lingering (or about to look again): end it now
      linger_until_ = Clock::time_point{};
      wake = true;
    }
  }
  if (wake) park_cv_.notify_all();
  return Awake(*this);
}

Context::Awake::~Awake() {
  if (!ctx_) return;
  std::lock_guard lock(ctx_->park_mu_);
  --ctx_->awake_;
}

}  // namespace taskwire::runtime
