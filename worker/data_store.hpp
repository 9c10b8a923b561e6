#pragma once
// The worker's data: key -> result Value (runtime/value.hpp), with byte accounting. A value
// is held in the form it came in: the live object a task here returned, or the bytes that
// came from a peer or a client. Local tasks read it without a copy (bytes are decoded once,
// by the first task that reads them: settle() then drops the bytes); it is serialized only to
// be sent (get, get_many) or spilled. Memory counts both forms (docs/worker-data.md).
//
// Spilling (after Dask's SpillBuffer): with a spill directory and a target, once the values
// held in memory pass the target, the least recently used ones are serialized and written to
// files there and dropped from memory; a spilled key stays held (contains, keys, size, nbytes
// count it) and comes back into memory as bytes, transparently, the next time it is read. A
// file that cannot be written (no permission, full disk) leaves its value in memory: data is
// never lost for want of disk, and the error is logged with the path.
//
// A spilled value carries a CRC-32 of its bytes, kept in memory. A file that is gone, cut
// short or whose bytes no longer match is a lost value, never a wrong one: the key stays
// listed (contains() is true until erase()) but every read of it fails, and the worker
// reports it missing so that the scheduler recomputes it (docs/faults.md).
//
// Thread-safety: every member may be called from any thread. The worker state machine writes
// (results, fetched dependencies) from the worker's strand while get_data requests read from
// the comms' strands. Spilling and unspilling read and write files under the store's lock.
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/value.hpp>

#include <cstdint>
#include <filesystem>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskwire::worker {

using runtime::Frame;
using runtime::Value;

struct SpillOptions {
  /// Where spilled values go (one file each); empty: never spill.
  std::filesystem::path directory;
  /// Values held in memory beyond this many bytes push the least recently used ones to disk
  /// (Dask's memory target); 0: only spill_to() spills.
  std::uint64_t target_bytes = 0;
};

/// What the store holds and has moved, for metrics and logs.
struct DataStoreCounts {
  std::size_t keys = 0;
  std::uint64_t memory_bytes = 0;   ///< values held in memory: live_bytes + serialized_bytes
  std::uint64_t live_bytes = 0;     ///< live objects (runtime::value_nbytes)
  std::uint64_t serialized_bytes = 0;  ///< bytes received or read back, not decoded yet
  std::size_t spilled_keys = 0;     ///< values on disk now
  std::uint64_t spilled_bytes = 0;  ///< their bytes (serialized)
  std::uint64_t spills_total = 0;   ///< values written to disk since start
  std::uint64_t spilled_bytes_total = 0;
  std::uint64_t unspills_total = 0;     ///< values read back
  std::uint64_t spill_failures_total = 0;  ///< writes that failed (the value stayed in memory)
  std::uint64_t spill_losses_total = 0;  ///< spilled values that could not be read back intact
};

class DataStore {
 public:
  explicit DataStore(SpillOptions spill = {});
  ~DataStore();  ///< removes the spill files it wrote
  DataStore(const DataStore&) = delete;
  DataStore& operator=(const DataStore&) = delete;

  /// Stores (or replaces) the value held for `key`, as the most recently used; then spills
  /// down to the target. A Frame is stored as bytes, decoded when a task first reads it.
  void put(const std::string& key, Value value);
  /// The value held for `key`, if any, for a task here to read: as held (nothing is
  /// serialized or decoded), read back from disk as bytes if it was spilled (nullopt, with an
  /// error logged, if its file cannot be read intact: the value is lost, see lost()). Marks
  /// it most recently used.
  std::optional<Value> value(const std::string& key) const;
  /// As value(), serialized (to send it: a live value is serialized each time, not kept).
  std::optional<Frame> get(const std::string& key) const;
  /// After a task read `value` (one of its arguments): if a decode made it live, the bytes it
  /// came as are dropped and the memory it counts for follows. No-op for values not held here.
  void settle(const Value& value);
  bool contains(const std::string& key) const;
  /// Drops `key` (and its spill file); returns whether it was held.
  bool erase(const std::string& key);

  /// For a get_data request: the serialized values of the keys held, in request order, and
  /// the keys not held (or whose spill file could not be read). One lock for the whole
  /// request; live values are serialized after it is released. Spilled values are read from
  /// disk but stay spilled (a peer's copy is not this worker's working set).
  struct Lookup {
    std::vector<std::pair<std::string, Frame>> found;
    std::vector<std::string> missing;
  };
  Lookup get_many(const std::vector<std::string>& keys) const;

  std::size_t size() const;
  std::uint64_t nbytes() const;  ///< sum of the held values' sizes, in memory or spilled
  std::uint64_t nbytes(const std::string& key) const;  ///< one value's size; 0 if not held
  std::vector<std::string> keys() const;

  /// Spills least recently used values until at most `memory_bytes` stay in memory, or none
  /// is left, or a write fails; returns the memory freed. No-op without a spill directory.
  std::uint64_t spill_to(std::uint64_t memory_bytes);
  /// Spills the least recently used value in memory; returns the memory it held (0: none
  /// spilled).
  std::uint64_t spill_oldest();
  DataStoreCounts counts() const;
  bool spilled(const std::string& key) const;
  /// Held, but its spill file could not be read back intact: every read of it fails.
  bool lost(const std::string& key) const;
  const SpillOptions& spill_options() const noexcept { return spill_; }

 private:
  struct Entry {
    Value value;  ///< empty while spilled
    std::uint64_t nbytes = 0;  ///< its size when stored (what nbytes() sums)
    /// What it counts for in memory now, per form (both while a decode is not settled).
    std::uint64_t live = 0, serialized = 0;
    std::uint64_t file_bytes = 0;  ///< the size of `file`
    bool in_memory = true;
    /// A copy on disk, kept when the value is read back (it has not changed), so that
    /// spilling it again writes nothing; empty: none.
    std::filesystem::path file;
    std::uint32_t checksum = 0;  ///< CRC-32 of the bytes in `file`
    bool lost = false;           ///< `file` could not be read back intact
    std::list<std::string>::iterator lru;  ///< in lru_ while in memory
  };

  bool spill_locked(Entry& e, const std::string& key) const;
  bool unspill_locked(Entry& e, const std::string& key) const;
  /// Adds (or, `sign` -1, removes) the entry's memory to the counts.
  void account_locked(const Entry& e, int sign) const;
  void hold_locked(Entry& e, const std::string& key, Value value) const;
  std::optional<Value> value_locked(const std::string& key) const;
  std::optional<Frame> read_spilled_locked(Entry& e, const std::string& key) const;
  void spill_to_target_locked() const;
  void drop_locked(std::unordered_map<std::string, Entry>::iterator it) const;
  void touch_locked(Entry& e) const;

  SpillOptions spill_;
  // Reading may unspill: the containers change under a const get().
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, Entry> data_;
  mutable std::list<std::string> lru_;  ///< in-memory keys, least recently used first
  mutable DataStoreCounts counts_;
  mutable std::uint64_t nbytes_ = 0;
  mutable std::uint64_t next_file_ = 0;
  mutable bool failing_ = false;  ///< the last write failed: log the next failure quietly
};

}  // namespace taskwire::worker
