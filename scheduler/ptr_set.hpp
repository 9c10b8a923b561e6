#pragma once
// PtrSet: the set of records a scheduler record points at (a task's dependents, waiters and
// dependencies not yet in memory; a worker's tasks; a client's keys). Most hold a handful of
// pointers, so an unordered_set (a bucket array and a node per element) spent more on malloc
// than on the lookups; a few hold thousands (a reduction over 10 000 results). The elements
// live in a vector, searched linearly while small; past kIndexFrom elements an index from
// pointer to position makes every operation O(1). Erasing swaps the last element into the
// hole, so order is arbitrary, as it was; callers that need an order sort.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskwire::scheduler {

template <class T>
class PtrSet {
 public:
  static constexpr std::size_t kIndexFrom = 32;
  using const_iterator = typename std::vector<T*>::const_iterator;

  /// True if `p` was not there.
  bool insert(T* p) {
    if (index_) {
      if (!index_->emplace(p, items_.size()).second) return false;
    } else if (position(p) != items_.size()) {
      return false;
    }
    items_.push_back(p);
    if (!index_ && items_.size() > kIndexFrom) build_index();
    return true;
  }
  /// 1 if `p` was there.
  std::size_t erase(T* p) {
    std::size_t at = 0;
    if (index_) {
      auto it = index_->find(p);
      if (it == index_->end()) return 0;
      at = it->second;
      index_->erase(it);
    } else {
      at = position(p);
      if (at == items_.size()) return 0;
    }
    if (at + 1 != items_.size()) {
      items_[at] = items_.back();
      if (index_) (*index_)[items_[at]] = at;
    }
    items_.pop_back();
    return 1;
  }
  bool contains(T* p) const {
    return index_ ? index_->count(p) != 0 : position(p) != items_.size();
  }
  std::size_t count(T* p) const { return contains(p) ? 1 : 0; }
  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  void clear() noexcept {
    items_.clear();
    index_.reset();
  }
  const_iterator begin() const noexcept { return items_.begin(); }
  const_iterator end() const noexcept { return items_.end(); }

 private:
  std::size_t position(T* p) const {  // items_.size() when absent
    return static_cast<std::size_t>(std::find(items_.begin(), items_.end(), p) - items_.begin());
  }
  void build_index() {
    index_ = std::make_unique<std::unordered_map<T*, std::size_t>>();
    index_->reserve(items_.size() * 2);
    for (std::size_t i = 0; i < items_.size(); ++i) index_->emplace(items_[i], i);
  }

  std::vector<T*> items_;
  std::unique_ptr<std::unordered_map<T*, std::size_t>> index_;  ///< past kIndexFrom only
};

}  // namespace taskwire::scheduler
