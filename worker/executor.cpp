#include <taskwire/worker/executor.hpp>

#include <spdlog/spdlog.h>

#include <stdexcept>

namespace taskwire::worker {

Executor::Executor(unsigned nthreads) : nthreads_(nthreads ? nthreads : 1) {}

Executor::~Executor() {
  try {
    stop();
  } catch (const std::exception& e) {
    spdlog::error("executor: {}", e.what());
  }
}

void Executor::start() {
  std::lock_guard lock(mu_);
  if (!threads_.empty() || stopping_) return;
  threads_.reserve(nthreads_);
  for (unsigned i = 0; i < nthreads_; ++i)
    threads_.emplace_back([this, i] { run(static_cast<int>(i)); });
}

bool Executor::submit(RunOrder priority, Job job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    queue_.insert(Entry{priority, next_seq_++, std::move(job)});
  }
  cv_.notify_one();
  return true;
}

std::size_t Executor::request_stop() {
  std::size_t dropped = 0;
  std::set<Entry> discarded;  // destroyed outside the lock: a job's captures may be heavy
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    dropped = queue_.size();
    discarded.swap(queue_);
  }
  cv_.notify_all();
  return dropped;
}

void Executor::stop() {
  {
    std::lock_guard lock(mu_);
    for (const auto& t : threads_)
      if (t.get_id() == std::this_thread::get_id())
        throw std::logic_error("Executor::stop() called from one of its own threads");
  }
  request_stop();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

std::size_t Executor::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

std::size_t Executor::running() const {
  std::lock_guard lock(mu_);
  return running_;
}

namespace {
thread_local int pool_thread_index = -1;
}  // namespace

int Executor::current_thread() noexcept { return pool_thread_index; }

void Executor::run(int index) {
  pool_thread_index = index;
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto node = queue_.extract(queue_.begin());
    Job job = std::move(node.value().job);
    ++running_;
    lock.unlock();
    try {
      job();
    } catch (const std::exception& e) {
      spdlog::error("executor: a job threw: {}", e.what());
    } catch (...) {
      spdlog::error("executor: a job threw a non-standard exception");
    }
    job = nullptr;
    lock.lock();
    --running_;
  }
}

}  // namespace taskwire::worker
