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
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace taskwire {

class Client;

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
  /// The same task, its result read as a U: for code that handles results undecoded
  /// (Future<runtime::Frame>, from Client::submit_tasks) and knows what a task returns.
  /// An empty future gives an empty one.
  template <class U>
  Future<U> as() const {
    return Future<U>(ref_);
  }
  /// The task's key. Every member below, this one included, throws std::logic_error on an
  /// empty future (default-constructed or moved from): it refers to no task.
  const std::string& key() const { return ref().key(); }

  /// Blocks until the task is done; returns its result or throws TaskError (the task threw,
  /// its function is unknown, a dependency failed, it was cancelled, or its workers died).
  T get() const {
    auto frame = ref().core().result(key());
    if constexpr (std::is_void_v<T>) {
      return;
    } else if constexpr (std::is_same_v<T, runtime::Frame>) {
      return frame;  // Future<runtime::Frame>: the result's bytes, not decoded
    } else {
      return runtime::from_frame<T>(frame);
    }
  }
  void wait() const { ref().core().wait(key(), std::nullopt); }
  /// True if done within `timeout`.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    return ref().core().wait(key(), std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  }
  bool done() const { return ref().core().status(key()) != client::KeyStatus::pending; }
  client::KeyStatus status() const { return ref().core().status(key()); }
  /// Asks the scheduler to cancel the task (and its dependents); get() then throws TaskError.
  /// Without `force`, a task another client holds a future to keeps running for it (this
  /// client lets go of it); with `force`, it is cancelled for every client.
  void cancel(bool force = false) const { ref().core().cancel({key()}, force); }

  /// Calls fn(future) on the client's callback thread once the task is done (successfully or
  /// not; at once if it is already), never on the io thread: fn may block or wait on other
  /// futures. What fn throws is logged as an error and goes no further. The callback holds
  /// a copy of this future until it has run.
  template <class F>
  void add_done_callback(F fn) const {
    ref().core().on_done(key(), [self = *this, fn = std::move(fn)]() mutable { fn(self); });
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
  template <class U>
  friend class Future;
  explicit Future(std::shared_ptr<client::KeyRef> ref) : ref_(std::move(ref)) {}

  // The key reference; a clear error instead of a null dereference for an empty future.
  const client::KeyRef& ref() const {
    if (!ref_)
      throw std::logic_error("taskwire::Future: the future is empty (default-constructed or "
                             "moved from) and refers to no task");
    return *ref_;
  }

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
/// A std::vector<Future<T>>: one argument of Client::submit filling a std::vector<T> parameter.
template <class T>
struct is_future_vector : std::false_type {};
template <class T, class Alloc>
struct is_future_vector<std::vector<Future<T>, Alloc>> : std::true_type {};

}  // namespace taskwire
