#pragma once
// AsCompleted<T>: futures in the order they finish, as they finish, after Dask's
// as_completed. Each future's completion costs O(1) (the core appends its key to a queue
// when the report arrives), so iterating n futures costs O(n).
//
//   for (auto& f : client.as_completed(futures)) use(f.get());  // fastest first
//   auto ac = client.as_completed(futures);
//   ac.add(client.submit(inc, 1));                              // more, while iterating
//   while (auto f = ac.next()) ...
//
// Thread-safety: one AsCompleted is used from one thread at a time (the futures it yields
// may go anywhere).
#include <taskwire/client/future.hpp>

#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace taskwire {

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
