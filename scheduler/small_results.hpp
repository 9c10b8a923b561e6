#pragma once
// Small results the scheduler was sent inline with their task_finished, kept for the tasks
// it places next: a consumer on another worker gets them with its compute_task instead of
// asking the producer for them (two messages fewer on a dependent edge's critical path; Ray
// inlines small objects into the tasks that read them the same way). Bounded in bytes; the
// oldest go first. A result is given only for the attempt that produced it, so a task run
// again (another attempt) is never answered with the old value.
#include <taskwire/runtime/frame.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

namespace taskwire::scheduler {

class SmallResults {
 public:
  explicit SmallResults(std::size_t budget_bytes) : budget_(budget_bytes) {}
  /// Keeps a copy of `bytes` (not the message buffer they may point into).
  void keep(const std::string& key, std::uint64_t attempt, const runtime::Frame& bytes);
  /// The bytes of `key`'s run `attempt`, or null.
  const runtime::Frame* find(const std::string& key, std::uint64_t attempt) const;
  void forget(const std::string& key);
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  struct Entry {
    std::uint64_t attempt = 0;
    runtime::Frame bytes;
    std::uint64_t order = 0;  ///< when it was kept (entries_in_order_ may hold older stamps)
  };
  static std::size_t cost(const std::string& key, const Entry& e) noexcept;
  void evict();

  std::size_t budget_;
  std::size_t bytes_ = 0;
  std::uint64_t next_order_ = 0;
  std::unordered_map<std::string, Entry> entries_;
  std::deque<std::pair<std::string, std::uint64_t>> order_;  ///< (key, its order when kept)
};

}  // namespace taskwire::scheduler
