#include <taskwire/scheduler/small_results.hpp>

#include <cstring>
#include <utility>
#include <vector>

namespace taskwire::scheduler {

// The key twice (map and queue) and the containers' own overhead, roughly.
std::size_t SmallResults::cost(const std::string& key, const Entry& e) noexcept {
  return 2 * key.size() + e.bytes.size() + 96;
}

void SmallResults::keep(const std::string& key, std::uint64_t attempt, const runtime::Frame& bytes) {
  if (budget_ == 0) return;
  forget(key);
  std::vector<char> copy(bytes.size());
  if (!copy.empty()) std::memcpy(copy.data(), bytes.data(), copy.size());
  Entry e{attempt, runtime::Frame(std::move(copy)), next_order_++};
  bytes_ += cost(key, e);
  order_.emplace_back(key, e.order);
  entries_.emplace(key, std::move(e));
  evict();
}

const runtime::Frame* SmallResults::find(const std::string& key, std::uint64_t attempt) const {
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.attempt == attempt ? &it->second.bytes : nullptr;
}

void SmallResults::forget(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  bytes_ -= cost(key, it->second);
  entries_.erase(it);  // its queue entry goes when it reaches the front (a stale stamp)
}

void SmallResults::evict() {
  auto stale = [this](const std::pair<std::string, std::uint64_t>& q) {
    auto it = entries_.find(q.first);
    return it == entries_.end() || it->second.order != q.second;
  };
  while (!order_.empty()) {
    if (stale(order_.front())) {
      order_.pop_front();
    } else if (bytes_ > budget_) {
      forget(order_.front().first);
      order_.pop_front();
    } else {
      break;
    }
  }
  // Stamps of results forgotten behind a live one: dropped once they outnumber the live ones.
  if (order_.size() > 2 * entries_.size() + 64) std::erase_if(order_, stale);
}

}  // namespace taskwire::scheduler
