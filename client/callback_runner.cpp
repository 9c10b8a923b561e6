#include <taskwire/client/callback_runner.hpp>

namespace taskwire::client {

CallbackRunner::~CallbackRunner() {
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  std::lock_guard lock(start_mu_);
  if (!thread_.joinable()) return;
  // The thread holds its own reference to the state, so it may outlive this object.
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void CallbackRunner::post(std::vector<std::function<void()>> jobs) {
  if (jobs.empty()) return;
  {
    std::lock_guard lock(state_->mu);
    for (auto& job : jobs) state_->jobs.push_back(std::move(job));
  }
  state_->cv.notify_one();
  std::lock_guard lock(start_mu_);
  if (!thread_.joinable()) thread_ = std::thread([state = state_] { run(state); });
}

void CallbackRunner::run(const std::shared_ptr<State>& state) {
  std::unique_lock lock(state->mu);
  for (;;) {
    state->cv.wait(lock, [&] { return state->stopping || !state->jobs.empty(); });
    if (state->stopping) return;
    auto job = std::move(state->jobs.front());
    state->jobs.pop_front();
    lock.unlock();
    job();
    job = nullptr;  // may release the last reference to the client, so outside the lock
    lock.lock();
  }
}

}  // namespace taskwire::client
