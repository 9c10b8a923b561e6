#pragma once
// Which tasks a worker runs inline on its event loop instead of its thread pool, and when a
// function loses that (task_runner.cpp's opening comment says why and how): per function
// the moving mean of its run times and its strikes for long inline runs, and the budget of
// inline runs in one handler of the worker's strand. On that strand only. Not installed API.
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace taskwire::worker {

/// Longest stretch of inline task runs in one handler of the strand.
inline constexpr std::chrono::microseconds kInlineBudget{1000};
/// An inline run longer than this many times the limit is a strike; kInlineStrikes of them
/// send the function to the thread pool for good; a strike fades after kInlineStrikeFade
/// short inline runs.
inline constexpr double kInlineBanFactor = 10;
inline constexpr int kInlineStrikes = 3;
/// A long inline run spent on the CPU counts this much, one spent off it (preempted or
/// blocked) 1: kInlineStrikes * kInlineStrikeWeight send the function to the pool.
inline constexpr int kInlineStrikeWeight = 10;
inline constexpr int kInlineStrikeFade = 1000;

class InlineRunPolicy {
 public:
  /// WorkerOptions::inline_task_seconds (0: never inline) and nthreads.
  InlineRunPolicy(double inline_task_seconds, unsigned nthreads)
      : inline_task_seconds_(inline_task_seconds), nthreads_(nthreads) {}

  /// A handler of the strand begins: its budget for inline runs starts now.
  void begin_handler();
  /// Whether `function` runs inline now: its runs were short, it is not banned, and the
  /// handler's budget is not spent.
  bool runs_inline(const std::string& function) const;
  /// An inline run is about to start (reads the thread's CPU time once per handler).
  void before_inline_run();
  /// A run of `function` took `seconds`; true when this inline run sent it to the pool for
  /// good.
  bool record(const std::string& function, double seconds, bool ran_inline);

 private:
  struct FunctionTiming {
    double mean_seconds = 0;  ///< moving average of recent runs
    std::uint64_t runs = 0;
    int strikes = 0;      ///< long inline runs, weighted (see kInlineStrikeWeight), fading
    int short_runs = 0;   ///< short inline runs since the last strike came or went
    bool banned = false;  ///< kInlineStrikes long inline runs: pool only
  };
  double limit_seconds() const;

  double inline_task_seconds_;
  unsigned nthreads_;
  std::unordered_map<std::string, FunctionTiming> timings_;
  std::chrono::steady_clock::time_point deadline_{};
  double cpu_start_ = -1;  ///< thread CPU seconds when the handler's first inline run began
};

}  // namespace taskwire::worker
