#pragma once
// CallbackRunner: the client's thread for done-callbacks (Future::add_done_callback, then),
// so that a slow or blocking callback never holds up the io thread that reads the
// scheduler's reports, and a callback may itself wait on futures. Started on first use.
// Thread-safety: post() may be called from any thread.
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace taskwire::client {

class CallbackRunner {
 public:
  CallbackRunner() = default;
  /// Stops the thread (jobs not started are dropped). Called on the runner's own thread (a
  /// job held the last reference to the client), it detaches it instead of joining.
  ~CallbackRunner();
  CallbackRunner(const CallbackRunner&) = delete;
  CallbackRunner& operator=(const CallbackRunner&) = delete;

  /// Queues `jobs` to run in order on the runner's thread. A job must not throw.
  void post(std::vector<std::function<void()>> jobs);

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> jobs;
    bool stopping = false;
  };
  static void run(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::mutex start_mu_;
  std::thread thread_;
};

}  // namespace taskwire::client
