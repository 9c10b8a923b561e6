#pragma once
// Future<T>: a reference-counted handle to a task's result in the cluster. Copies share the
// key; when the last Future (and the last task depending on it) is gone, the key is released
// on the scheduler and the workers. Passing a Future as a task argument makes it a
// dependency: its data then moves worker to worker, never through the client.
// Thread-safety: a Future may be used from any thread.
#include <taskwire/client/client_core.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace taskwire {

class Client;
namespace client {
class ClientAccess;
}

namespace client {
template <class F, class T>
struct ThenResult {
  using type = std::invoke_result_t<F, T>;
};
template <class F>
struct ThenResult<F, void> {
  using type = std::invoke_result_t<F>;
};
}  // namespace client

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
  /// Without `force`, a task another client holds a future to keeps running for it (this
  /// client lets go of it); with `force`, it is cancelled for every client.
  void cancel(bool force = false) const { ref_->core().cancel({key()}, force); }

  /// Calls fn(future) on the client's callback thread once the task is done (successfully or
  /// not; at once if it is already), never on the io thread: fn may block or wait on other
  /// futures. What fn throws is logged as an error and goes no further. The callback holds
  /// a copy of this future until it has run.
  template <class F>
  void add_done_callback(F fn) const {
    ref_->core().on_done(key(), [self = *this, fn = std::move(fn)]() mutable { fn(self); });
  }

  /// Calls fn(result) (fn() for Future<void>) on the client's callback thread once the task
  /// is done, and returns what fn returns as a std::future. Whatever fn or the task threw
  /// (TaskError) is passed on there instead.
  template <class F>
  auto then(F fn) const {
    using U = typename client::ThenResult<F, T>::type;
    auto promise = std::make_shared<std::promise<U>>();
    auto result = promise->get_future();
    add_done_callback([promise, fn = std::move(fn)](const Future& self) mutable {
      try {
        if constexpr (std::is_void_v<U>) {
          call(fn, self);
          promise->set_value();
        } else {
          promise->set_value(call(fn, self));
        }
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    });
    return result;
  }

 private:
  friend class Client;
  friend class client::ClientAccess;
  explicit Future(std::shared_ptr<client::KeyRef> ref) : ref_(std::move(ref)) {}

  // fn applied to the result of `self` (or to nothing for void): then()'s step.
  template <class F>
  static decltype(auto) call(F& fn, const Future& self) {
    if constexpr (std::is_void_v<T>) {
      self.get();
      return fn();
    } else {
      return fn(self.get());
    }
  }

  std::shared_ptr<client::KeyRef> ref_;
};

template <class T>
struct is_future : std::false_type {};
template <class T>
struct is_future<Future<T>> : std::true_type {};

}  // namespace taskwire
