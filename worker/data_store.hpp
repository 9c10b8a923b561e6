#pragma once
// The worker's data: key -> result frame, with byte accounting. Frames are shared, never
// copied: the frame an executor produced is the one a peer's get_data receives.
//
// Thread-safety: every member may be called from any thread. The worker state machine writes
// (results, fetched dependencies) from the worker's strand while get_data requests read from
// the comms' strands.
#include <taskwire/runtime/frame.hpp>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskwire::worker {

using runtime::Frame;

class DataStore {
 public:
  DataStore() = default;
  DataStore(const DataStore&) = delete;
  DataStore& operator=(const DataStore&) = delete;

  /// Stores (or replaces) the frame held for `key`.
  void put(const std::string& key, Frame frame);
  /// The frame held for `key`, if any.
  std::optional<Frame> get(const std::string& key) const;
  bool contains(const std::string& key) const;
  /// Drops `key`; returns whether it was held.
  bool erase(const std::string& key);

  /// For a get_data request: the frames of the keys held, in request order, and the keys
  /// not held. One lock for the whole request.
  struct Lookup {
    std::vector<std::pair<std::string, Frame>> found;
    std::vector<std::string> missing;
  };
  Lookup get_many(const std::vector<std::string>& keys) const;

  std::size_t size() const;
  std::uint64_t nbytes() const;  ///< sum of the held frames' sizes
  std::vector<std::string> keys() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, Frame> data_;
  std::uint64_t nbytes_ = 0;
};

}  // namespace taskwire::worker
