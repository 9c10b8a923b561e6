#pragma once
// What a submission gives back: Future<T>, the error its get() throws (TaskError), and
// AsCompleted<T>, futures in the order they finish.
//
// Future<T>: a reference-counted handle to a task's result in the cluster. Copies share the
// key; when the last Future (and the last task depending on it) is gone, the key is released
// on the scheduler and the workers. Passing a Future as a task argument makes it a
// dependency: its data then moves worker to worker, never through the client.
// Thread-safety: a Future may be used from any thread.
//
// AsCompleted<T>, after Dask's as_completed: each future's completion costs O(1) (the core
// appends its key to a queue when the report arrives), so iterating n futures costs O(n).
//
//   for (auto& f : client.as_completed(futures)) use(f.get());  // fastest first
//   auto ac = client.as_completed(futures);
//   ac.add(client.submit(inc, 1));                              // more, while iterating
//   while (auto f = ac.next()) ...
//
// Thread-safety: one AsCompleted is used from one thread at a time (the futures it yields
// may go anywhere).
//
// What a Future does that is not about its type T (waiting, its status, fetching the result's
// bytes) is done by client::detail::KeyHandle, and AsCompleted's queue by
// client::detail::CompletionQueue, both in client/future.cpp: the connection behind them
// (ClientCore, the wire protocol, the comm layer, Asio) stays out of this header.
#include <taskwire/runtime/serialize.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskwire {

/// A task failed (it threw, its function is unknown, a dependency failed, it was cancelled,
/// or the workers running it died). Thrown by Future::get() and Client::gather().
///
/// When a worker reported the failure, the error says where: what() reads
///   task 'f-3' raised std::invalid_argument on worker w2: bad input
///   task 'g-4' failed: dependency 'f-3' raised std::invalid_argument on worker w2: bad input
/// and exception_type(), worker() and worker_address() say it apart.
class TaskError : public std::runtime_error {
 public:
  /// Where a failure reported by a worker came from (all fields may be empty).
  struct Origin {
    std::string raised_by;       ///< the task that failed: the key itself, or a dependency
    std::string cause;           ///< what raised_by raised (its exception's what())
    std::string exception_type;  ///< demangled, e.g. "std::invalid_argument"; empty: no throw
    std::string worker;          ///< the name of the worker that ran raised_by
    std::string worker_address;  ///< its contact address
  };

  /// A failure no worker reported (cancelled, lost, refused...): what() is
  /// "task KEY failed: MESSAGE".
  TaskError(std::string key, std::string message)
      : std::runtime_error("task " + key + " failed: " + message), key_(std::move(key)),
        message_(std::move(message)) {}
  /// A failure a worker reported; `message` is the scheduler's text ("dependency 'K' failed:
  /// ..." for a dependent).
  TaskError(std::string key, std::string message, Origin origin)
      : std::runtime_error(describe(key, message, origin)), key_(std::move(key)),
        message_(std::move(message)), origin_(std::move(origin)) {}

  const std::string& key() const noexcept { return key_; }
  const std::string& message() const noexcept { return message_; }  ///< the original text
  /// The demangled type of what the task threw; empty if it threw nothing or it is unknown.
  const std::string& exception_type() const noexcept { return origin_.exception_type; }
  /// The name of the worker the failing task ran on; empty if unknown.
  const std::string& worker() const noexcept { return origin_.worker; }
  const std::string& worker_address() const noexcept { return origin_.worker_address; }
  /// The task that failed: key() itself or a dependency; empty if unknown.
  const std::string& raised_by() const noexcept { return origin_.raised_by; }
  /// What raised_by() raised (its exception's what()); empty if unknown.
  const std::string& cause() const noexcept { return origin_.cause; }

 private:
  static std::string describe(const std::string& key, const std::string& message,
                              const Origin& o) {
    if (o.worker.empty()) return "task " + key + " failed: " + message;
    const bool own = o.raised_by.empty() || o.raised_by == key;
    std::string text = own ? "task '" + key + "'" : "task '" + key + "' failed: dependency '" +
                                                        o.raised_by + "'";
    text += o.exception_type.empty() ? " failed" : " raised " + o.exception_type;
    return text + " on worker " + o.worker + ": " + (own ? message : o.cause);
  }

  std::string key_, message_;
  Origin origin_;
};

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

namespace client {
struct Completions;  // client/client_core.hpp

namespace detail {
/// Keys of one client in the order they finish, whatever the futures' T (client/future.cpp).
class CompletionQueue {
 public:
  explicit CompletionQueue(std::shared_ptr<ClientCore> core);
  /// Appends `key` once it is done (at once if it is); a key watched twice comes twice.
  void watch(const std::string& key);
  /// Blocks until a watched key is done; removes and returns the first one.
  std::string next();

 private:
  std::shared_ptr<ClientCore> core_;
  std::shared_ptr<Completions> completions_;
};
}  // namespace detail
}  // namespace client

template <class T>
class AsCompleted {
 public:
  /// Watches `futures` (all from the client whose queue this is): Client::as_completed.
  AsCompleted(client::detail::CompletionQueue queue, const std::vector<Future<T>>& futures)
      : queue_(std::move(queue)) {
    for (const auto& f : futures) add(f);
  }

  /// Watches one more future; it is yielded once it is done (a future added twice, twice).
  void add(const Future<T>& future) {
    pending_[future.key()].push_back(future);
    ++count_;
    queue_.watch(future.key());
  }

  /// Futures added and not yet yielded (done or not).
  std::size_t size() const noexcept { return count_; }
  bool empty() const noexcept { return count_ == 0; }

  /// The next future to finish, blocking until one does; nullopt once every future added
  /// has been yielded.
  std::optional<Future<T>> next() {
    if (count_ == 0) return std::nullopt;
    const std::string key = queue_.next();
    auto it = pending_.find(key);
    Future<T> f = std::move(it->second.back());
    it->second.pop_back();
    if (it->second.empty()) pending_.erase(it);
    --count_;
    return f;
  }

  /// An input iterator over next(): each step blocks until another future is done.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Future<T>;
    using difference_type = std::ptrdiff_t;
    using pointer = Future<T>*;
    using reference = Future<T>&;

    iterator() = default;
    explicit iterator(AsCompleted* owner) : owner_(owner), current_(owner->next()) {}
    reference operator*() { return *current_; }
    pointer operator->() { return &*current_; }
    iterator& operator++() {
      current_ = owner_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    /// Equal to end() once there is nothing left to yield.
    friend bool operator==(const iterator& a, const iterator& b) {
      return a.current_.has_value() == b.current_.has_value() && !a.current_.has_value();
    }

   private:
    AsCompleted* owner_ = nullptr;
    std::optional<Future<T>> current_;
  };
  iterator begin() { return iterator(this); }
  iterator end() { return iterator(); }

 private:
  client::detail::CompletionQueue queue_;
  std::unordered_map<std::string, std::vector<Future<T>>> pending_;  // by key, not yet yielded
  std::size_t count_ = 0;
};

}  // namespace taskwire
