#pragma once
// Future<T>: a reference-counted handle to a task's result in the cluster. Copies share the
// key; when the last Future (and the last task depending on it) is gone, the key is released
// on the scheduler and the workers. Passing a Future as a task argument makes it a
// dependency: its data then moves worker to worker, never through the client.
// Thread-safety: a Future may be used from any thread.
#include <taskwire/client/client_core.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace taskwire {

class Client;
namespace client {
class ClientAccess;
}

template <class T>
class Future {
 public:
  using value_type = T;
  Future() = default;  ///< not valid() until assigned from one a Client returned

  bool valid() const noexcept { return static_cast<bool>(ref_); }
  const std::string& key() const { return ref_->key(); }

  /// Blocks until the task is done; returns its result or throws TaskError (the task threw,
  /// its function is unknown, a dependency failed, it was cancelled, or its workers died).
  T get() const {
    auto frame = ref_->core().result(key());
    if constexpr (std::is_void_v<T>) {
      return;
    } else {
      return runtime::from_frame<T>(frame);
    }
  }
  void wait() const { ref_->core().wait(key(), std::nullopt); }
  /// True if done within `timeout`.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    return ref_->core().wait(key(), std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  }
  bool done() const { return ref_->core().status(key()) != client::KeyStatus::pending; }
  client::KeyStatus status() const { return ref_->core().status(key()); }
  /// Asks the scheduler to cancel the task (and its dependents); get() then throws TaskError.
  void cancel() const { ref_->core().cancel({key()}); }


 private:
  friend class Client;
  friend class client::ClientAccess;
  explicit Future(std::shared_ptr<client::KeyRef> ref) : ref_(std::move(ref)) {}

  std::shared_ptr<client::KeyRef> ref_;
};

template <class T>
struct is_future : std::false_type {};
template <class T>
struct is_future<Future<T>> : std::true_type {};

}  // namespace taskwire
