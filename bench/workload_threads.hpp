#pragma once
// What the workloads' in-process runs are made of: a parallel loop and a dependency-driven
// executor on a fixed number of std::threads, and the pairing of a tree reduction shared with
// the cluster runs (so that both add in the same order).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace taskwire::bench {

/// `threads` threads that live as long as the process: the caller's and threads - 1 helpers.
/// Kept rather than started per loop because each new thread may get another allocator arena
/// (jemalloc gives threads arenas in turn), where the memory an earlier loop freed is not
/// found: every loop would touch fresh pages, which costs ~4 ms per MB here.
class ThreadTeam {
 public:
  /// The team of `threads` (made at the first call, or again when the count changes; call it
  /// from one thread at a time).
  static ThreadTeam& of(int threads) {
    static std::unique_ptr<ThreadTeam> team;
    if (!team || team->size() != threads) team.reset(new ThreadTeam(threads));
    return *team;
  }
  ~ThreadTeam() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : helpers_) t.join();
  }
  int size() const { return static_cast<int>(helpers_.size()) + 1; }

  /// body() on every thread of the team, the caller's included; returns when all returned.
  void run(const std::function<void()>& body) {
    std::unique_lock lock(mu_);
    body_ = &body;
    busy_ = helpers_.size();
    ++generation_;
    cv_.notify_all();
    lock.unlock();
    body();
    lock.lock();
    done_cv_.wait(lock, [this] { return busy_ == 0; });
    body_ = nullptr;
  }

 private:
  explicit ThreadTeam(int threads) {
    for (int t = 1; t < threads; ++t) helpers_.emplace_back([this] { serve(); });
  }
  void serve() {
    std::uint64_t seen = 0;
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      const auto* body = body_;
      lock.unlock();
      (*body)();
      lock.lock();
      if (--busy_ == 0) done_cv_.notify_all();
    }
  }

  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void()>* body_ = nullptr;
  std::size_t busy_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

/// fn(i) for i in [0, n) on `threads` threads, each taking the next index as it frees up.
/// Rethrows the first exception once all are done.
template <class Fn>
void parallel_for(std::size_t n, int threads, Fn fn) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  const auto body = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
      }
  };
  ThreadTeam::of(threads).run(body);
  if (error) std::rethrow_exception(error);
}

/// Tasks with dependencies run on `threads` threads: a ready task with the lowest id first
/// (the order they were added, as a client's submissions run at equal priority).
class ThreadDag {
 public:
  /// Adds a task run after every task in `deps` (ids returned by earlier add()s).
  std::size_t add(std::function<void()> fn, const std::vector<std::size_t>& deps) {
    const std::size_t id = tasks_.size();
    tasks_.push_back({std::move(fn), deps.size(), {}});
    for (std::size_t d : deps) tasks_.at(d).dependents.push_back(id);
    return id;
  }

  void run(int threads) {
    for (std::size_t i = 0; i < tasks_.size(); ++i)
      if (tasks_[i].waiting == 0) ready_.insert(i);
    ThreadTeam::of(threads).run([this] { work(); });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  struct Task {
    std::function<void()> fn;
    std::size_t waiting;
    std::vector<std::size_t> dependents;
  };

  void work() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return !ready_.empty() || finished_ == tasks_.size() || error_; });
      if (ready_.empty()) return;
      const std::size_t id = *ready_.begin();
      ready_.erase(ready_.begin());
      lock.unlock();
      std::exception_ptr failed;
      try {
        tasks_[id].fn();
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      if (failed && !error_) error_ = failed;
      ++finished_;
      for (std::size_t d : tasks_[id].dependents)
        if (--tasks_[d].waiting == 0) ready_.insert(d);
      cv_.notify_all();
      if (error_) return;
    }
  }

  std::vector<Task> tasks_;
  std::set<std::size_t> ready_;
  std::size_t finished_ = 0;
  std::exception_ptr error_;
  std::mutex mu_;
  std::condition_variable cv_;
};

/// Reduces `items` level by level: (0+1), (2+3), ..., an odd last one carried up unchanged.
/// combine(a, b) returns the combination (a value, or a future to it).
template <class T, class Combine>
T reduce_in_pairs(std::vector<T> items, Combine combine) {
  while (items.size() > 1) {
    std::vector<T> next;
    for (std::size_t i = 0; i + 1 < items.size(); i += 2)
      next.push_back(combine(items[i], items[i + 1]));
    if (items.size() % 2) next.push_back(std::move(items.back()));
    items = std::move(next);
  }
  return std::move(items.front());
}

}  // namespace taskwire::bench
