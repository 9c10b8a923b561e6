#pragma once
// The clock a Context's own thread reads while it parks for a Drive (context_drive.cpp): how
// long a linger lasts, when it looks again. steady_clock, unless a test installs one it moves
// by hand, so that a test of lingers depends on no stall of a loaded machine (a linger then
// ends when the test moves the clock past it, never by itself). Not a public header.
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace taskwire::runtime {

class ParkClock {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~ParkClock() = default;
  virtual Clock::time_point now() = 0;
  /// Waits on `cv` (`lock` held) until notified, or until `now()` reaches `until` if this
  /// clock moves by itself. A clock moved by hand must wake the waiter when it moves: it
  /// locks `lock`'s mutex, then notifies `cv` (so the move cannot fall between the
  /// waiter's look at now() and its wait).
  virtual void wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                          Clock::time_point until) = 0;
};

/// Installs `clock` for the parking of every Context (null: steady_clock again). For tests:
/// call it while no Context's own thread is parked, and keep `clock` alive until replaced.
void set_park_clock(ParkClock* clock) noexcept;

}  // namespace taskwire::runtime
