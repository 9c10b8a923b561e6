#include <taskwire/worker/inline_run_policy.hpp>

#include <time.h>

#include <algorithm>
#include <cstdint>

namespace taskwire::worker {

namespace {
double thread_cpu_seconds() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
}  // namespace

void InlineRunPolicy::begin_handler() {
  deadline_ = std::chrono::steady_clock::now() + kInlineBudget;
  cpu_start_ = -1;
}

// A worker of one thread has no other slot that an inline run could hold up, so there a
// function runs inline when it fits in one handler's budget; a worker of several threads keeps
// inline the functions quicker than a hand-over (docs/measurements.md, "Very short tasks").
double InlineRunPolicy::limit_seconds() const {
  if (inline_task_seconds_ <= 0) return 0;
  if (nthreads_ == 1)
    return std::max(inline_task_seconds_, std::chrono::duration<double>(kInlineBudget).count());
  return inline_task_seconds_;
}

bool InlineRunPolicy::runs_inline(const std::string& function) const {
  const double limit = limit_seconds();
  if (limit <= 0) return false;
  auto it = timings_.find(function);
  return it != timings_.end() && !it->second.banned && it->second.mean_seconds <= limit &&
         std::chrono::steady_clock::now() < deadline_;
}

void InlineRunPolicy::before_inline_run() {
  // The thread's CPU time, read once per batch of inline runs (a system call here).
  if (cpu_start_ < 0) cpu_start_ = thread_cpu_seconds();
}

bool InlineRunPolicy::record(const std::string& function, double seconds, bool ran_inline) {
  auto& t = timings_[function];
  t.mean_seconds = t.runs == 0 ? seconds : 0.8 * t.mean_seconds + 0.2 * seconds;
  ++t.runs;
  if (!ran_inline || t.banned) return false;
  // A long run: kInlineBanFactor times the limit, but at most two handlers' budgets (a
  // one-thread worker's 1 ms limit would otherwise let 9 ms runs block its loop unpunished).
  const double long_run = std::min(kInlineBanFactor * limit_seconds(),
                                   2 * std::chrono::duration<double>(kInlineBudget).count());
  if (seconds <= long_run) {
    if (t.strikes > 0 && ++t.short_runs == kInlineStrikeFade) {
      t.strikes = std::max(0, t.strikes - kInlineStrikeWeight);
      t.short_runs = 0;
    }
    return false;
  }
  // Long in wall-clock time. If the thread used that much CPU since the batch began (an upper
  // bound of this run's), it was slow: a strike. If not, it was off the CPU: preempted
  // (frequent with more busy threads than cores, and no fault of the function) or blocked
  // (sleep, I/O, a lock: the event loop waited all the same), which counts for less.
  const double cpu = thread_cpu_seconds() - cpu_start_;
  const bool on_cpu = cpu > long_run && cpu >= 0.5 * seconds;
  t.strikes += on_cpu ? kInlineStrikeWeight : 1;
  t.short_runs = 0;
  if (t.strikes < kInlineStrikes * kInlineStrikeWeight) return false;
  t.banned = true;
  return true;
}

}  // namespace taskwire::worker
