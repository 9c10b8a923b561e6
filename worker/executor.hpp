#pragma once
// Executor: the worker's thread pool. Jobs wait in a priority queue (RunOrder first, equal
// priorities in submission order) and run on `nthreads` threads. The worker
// state machine already limits how many tasks it hands over to the thread count, so the
// queue is short; it still orders a burst of submissions by priority.
//
// Thread-safety: submit(), request_stop() and the queries may be called from any thread;
// stop() from any thread except the pool's own.
#include <taskwire/worker/run_order.hpp>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace taskwire::worker {

class Executor {
 public:
  using Job = std::function<void()>;

  explicit Executor(unsigned nthreads);  ///< at least 1 thread
  ~Executor();                           ///< stop()
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Starts the threads. Idempotent; a stopped executor does not restart.
  void start();
  /// Queues `job`. Returns false (and drops the job) once stop has been requested. A job
  /// that throws is logged and does not take its thread down.
  bool submit(RunOrder priority, Job job);
  /// Non-blocking: no further job starts, queued jobs are discarded (their count is
  /// returned); running jobs finish on their own.
  std::size_t request_stop();
  /// request_stop(), then waits for the running jobs and joins the threads. Idempotent.
  /// Throws std::logic_error when called from one of the pool's threads.
  void stop();

  unsigned nthreads() const noexcept { return nthreads_; }
  /// The calling thread's index in its pool (0 .. nthreads-1); -1 outside any pool.
  static int current_thread() noexcept;
  std::size_t queued() const;
  std::size_t running() const;

 private:
  struct Entry {
    RunOrder priority;
    std::uint64_t seq;
    mutable Job job;
    bool operator<(const Entry& o) const noexcept {
      return priority != o.priority ? priority < o.priority : seq < o.seq;
    }
  };
  void run(int index);

  const unsigned nthreads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<Entry> queue_;
  std::uint64_t next_seq_ = 0;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace taskwire::worker
