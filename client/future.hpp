#pragma once
// Future<T>: a reference-counted handle to a task's result in the cluster. Copies share the
// key; when the last Future (and the last task depending on it) is gone, the key is released
// on the scheduler and the workers. Passing a Future as a task argument makes it a
// dependency: its data then moves worker to worker, never through the client.
// Thread-safety: a Future may be used from any thread.
//
// What a Future does that is not about its type T (waiting, its status, fetching the result's
// bytes) is done by client::detail::KeyHandle, in client/future.cpp: the connection behind it
// (ClientCore, the wire protocol, the comm layer, Asio) stays out of this header.
#include <taskwire/runtime/serialize.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace taskwire {

class Client;

namespace client {
class KeyRef;     // client/client_core.hpp: one reference to a key the client holds
class ClientCore;

enum class KeyStatus { pending, memory, erred, cancelled, lost };

namespace detail {
/// A Future's reference to its key, whatever its T. Every member but valid() throws
/// std::logic_error when empty (a default-constructed or moved-from Future): it refers to no
/// task.
class KeyHandle {
 public:
  KeyHandle() = default;
  explicit KeyHandle(std::shared_ptr<KeyRef> ref) : ref_(std::move(ref)) {}

  bool valid() const noexcept { return static_cast<bool>(ref_); }
  const std::string& key() const;
  /// Blocks until done; the result's bytes, or throws TaskError (as Future::get).
  runtime::Frame result() const;
  /// Blocks until done or `timeout` passes (none: no limit); true if done.
  bool wait(std::optional<std::chrono::milliseconds> timeout) const;
  KeyStatus status() const;
  void cancel(bool force) const;
  /// Runs `callback` on the client's callback thread once the key is done.
  void on_done(std::function<void()> callback) const;

 private:
  const KeyRef& ref() const;
  std::shared_ptr<KeyRef> ref_;
};
}  // namespace detail

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

  bool valid() const noexcept { return handle_.valid(); }
  /// The same task, its result read as a U: for code that handles results undecoded
  /// (Future<runtime::Frame>, from Client::submit_tasks) and knows what a task returns.
  /// An empty future gives an empty one.
  template <class U>
  Future<U> as() const {
    return Future<U>(handle_);
  }
  /// The task's key. Every member below, this one included, throws std::logic_error on an
  /// empty future (default-constructed or moved from): it refers to no task.
  const std::string& key() const { return handle_.key(); }

  /// Blocks until the task is done; returns its result or throws TaskError (the task threw,
  /// its function is unknown, a dependency failed, it was cancelled, or its workers died).
  T get() const {
    auto frame = handle_.result();
    if constexpr (std::is_void_v<T>) {
      return;
    } else if constexpr (std::is_same_v<T, runtime::Frame>) {
      return frame;  // Future<runtime::Frame>: the result's bytes, not decoded
    } else {
      return runtime::from_frame<T>(frame);
    }
  }
  void wait() const { handle_.wait(std::nullopt); }
  /// True if done within `timeout`.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    return handle_.wait(std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
  }
  bool done() const { return handle_.status() != client::KeyStatus::pending; }
  client::KeyStatus status() const { return handle_.status(); }
  /// Asks the scheduler to cancel the task (and its dependents); get() then throws TaskError.
  /// Without `force`, a task another client holds a future to keeps running for it (this
  /// client lets go of it); with `force`, it is cancelled for every client.
  void cancel(bool force = false) const { handle_.cancel(force); }

  /// Calls fn(future) on the client's callback thread once the task is done (successfully or
  /// not; at once if it is already), never on the io thread: fn may block or wait on other
  /// futures. What fn throws is logged as an error and goes no further. The callback holds
  /// a copy of this future until it has run.
  template <class F>
  void add_done_callback(F fn) const {
    handle_.on_done([self = *this, fn = std::move(fn)]() mutable { fn(self); });
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
  explicit Future(client::detail::KeyHandle handle) : handle_(std::move(handle)) {}

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

  client::detail::KeyHandle handle_;
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
