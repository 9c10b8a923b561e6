#include <taskwire/worker/data_store.hpp>

#include <taskwire/runtime/process_info.hpp>

#include <boost/crc.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace taskwire::worker {
namespace {

std::runtime_error file_error(const char* what, const std::filesystem::path& path, int err) {
  return std::runtime_error(fmt::format("{} {}: {}", what, path.string(), std::strerror(err)));
}

void write_file(const std::filesystem::path& path, const Frame& frame) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw file_error("cannot create spill file", path, errno);
  std::size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = ::write(fd, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      ::unlink(path.c_str());
      throw file_error("cannot write spill file", path, err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    throw file_error("cannot write spill file", path, err);
  }
}

Frame read_file(const std::filesystem::path& path, std::uint64_t nbytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw file_error("cannot open spill file", path, errno);
  Frame frame = Frame::allocate(nbytes);
  std::size_t done = 0;
  while (done < nbytes) {
    const ssize_t n = ::read(fd, frame.mutable_data() + done, nbytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw file_error(n == 0 ? "spill file is short:" : "cannot read spill file", path, err);
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return frame;
}

std::uint32_t crc32_of(const Frame& frame) {
  boost::crc_32_type crc;
  crc.process_bytes(frame.data(), frame.size());
  return crc.checksum();
}

}  // namespace

DataStore::DataStore(SpillOptions spill) : spill_(std::move(spill)) {}

DataStore::~DataStore() {
  for (const auto& [key, e] : data_)
    if (!e.file.empty()) ::unlink(e.file.c_str());
}

void DataStore::account_locked(const Entry& e, int sign) const {
  if (sign > 0) {
    counts_.live_bytes += e.live;
    counts_.serialized_bytes += e.serialized;
    counts_.memory_bytes += e.live + e.serialized;
  } else {
    counts_.live_bytes -= e.live;
    counts_.serialized_bytes -= e.serialized;
    counts_.memory_bytes -= e.live + e.serialized;
  }
}

// The entry's value becomes `value`, in memory, most recently used; the counts follow.
void DataStore::hold_locked(Entry& e, const std::string& key, Value value) const {
  value.mark_held(key);
  e.live = value.live_bytes();
  e.serialized = value.serialized_bytes();
  e.value = std::move(value);
  e.in_memory = true;
  e.lru = lru_.insert(lru_.end(), key);
  account_locked(e, +1);
}

void DataStore::put(const std::string& key, Value value) {
  std::lock_guard lock(mu_);
  if (auto it = data_.find(key); it != data_.end()) drop_locked(it);
  Entry& e = data_[key];
  e.nbytes = value.size();
  nbytes_ += e.nbytes;
  hold_locked(e, key, std::move(value));
  spill_to_target_locked();
}

std::optional<Value> DataStore::value_locked(const std::string& key) const {
  auto it = data_.find(key);
  if (it == data_.end()) return std::nullopt;
  if (!it->second.in_memory && !unspill_locked(it->second, key)) return std::nullopt;
  Value out = it->second.value;
  touch_locked(it->second);
  spill_to_target_locked();
  return out;
}

std::optional<Value> DataStore::value(const std::string& key) const {
  std::lock_guard lock(mu_);
  return value_locked(key);
}

std::optional<Frame> DataStore::get(const std::string& key) const {
  std::optional<Value> v;
  {
    std::lock_guard lock(mu_);
    v = value_locked(key);
  }
  if (!v) return std::nullopt;
  return v->bytes();  // serialized outside the lock: an 8 MiB encode is milliseconds
}

void DataStore::settle(const Value& value) {
  const auto key = value.key_if_both_forms();  // most arguments: empty, and no store lock
  if (key.empty()) return;
  std::lock_guard lock(mu_);
  auto it = data_.find(key);
  if (it == data_.end() || !it->second.in_memory || !it->second.value.same_as(value)) return;
  Entry& e = it->second;
  if (!value.drop_bytes_if_live()) return;
  account_locked(e, -1);
  e.live = value.live_bytes();
  e.serialized = 0;
  account_locked(e, +1);
  spill_to_target_locked();
}

bool DataStore::contains(const std::string& key) const {
  std::lock_guard lock(mu_);
  return data_.count(key) != 0;
}

bool DataStore::spilled(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = data_.find(key);
  return it != data_.end() && !it->second.in_memory;
}

bool DataStore::lost(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = data_.find(key);
  return it != data_.end() && it->second.lost;
}

bool DataStore::erase(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = data_.find(key);
  if (it == data_.end()) return false;
  drop_locked(it);
  return true;
}

void DataStore::drop_locked(std::unordered_map<std::string, Entry>::iterator it) const {
  Entry& e = it->second;
  nbytes_ -= e.nbytes;
  if (e.in_memory) {
    account_locked(e, -1);
    lru_.erase(e.lru);
  } else {
    --counts_.spilled_keys;
    counts_.spilled_bytes -= e.file_bytes;
  }
  if (!e.file.empty()) ::unlink(e.file.c_str());
  data_.erase(it);
}

void DataStore::touch_locked(Entry& e) const { lru_.splice(lru_.end(), lru_, e.lru); }

DataStore::Lookup DataStore::get_many(const std::vector<std::string>& keys) const {
  Lookup out;
  std::vector<std::pair<std::size_t, Value>> to_serialize;  // (index in found, value)
  {
    std::lock_guard lock(mu_);
    for (const auto& key : keys) {
      auto it = data_.find(key);
      if (it == data_.end()) {
        out.missing.push_back(key);
      } else if (it->second.in_memory) {
        touch_locked(it->second);
        to_serialize.emplace_back(out.found.size(), it->second.value);
        out.found.emplace_back(key, Frame());
      } else if (auto frame = read_spilled_locked(it->second, key)) {
        // Read for a peer or a client, not brought back: it would push out data this
        // worker's own tasks use, for a copy that lives only until the reply is sent.
        out.found.emplace_back(key, std::move(*frame));
      } else {
        out.missing.push_back(key);
      }
    }
  }
  for (auto& [at, value] : to_serialize) out.found[at].second = value.bytes();
  return out;
}

bool DataStore::spill_locked(Entry& e, const std::string& key) const {
  if (e.file.empty()) {
    auto path = spill_.directory / fmt::format("spill-{}", next_file_++);
    try {
      const Frame bytes = e.value.bytes();  // a live value is serialized here, and only here
      write_file(path, bytes);
      e.checksum = crc32_of(bytes);
      e.file_bytes = bytes.size();
    } catch (const std::exception& ex) {
      ++counts_.spill_failures_total;
      // Once per run of failures: a full disk would otherwise log every put.
      if (!failing_)
        spdlog::error("worker data store: {}; keeping '{}' ({} bytes) and the rest in memory",
                      ex.what(), key, e.nbytes);
      failing_ = true;
      return false;
    }
    if (failing_) spdlog::info("worker data store: spilling to {} works again", path.string());
    failing_ = false;
    e.file = std::move(path);
    ++counts_.spills_total;
    counts_.spilled_bytes_total += e.file_bytes;
  }
  // Tasks that were handed the value keep it alive until they finish; the store lets go.
  e.value = Value();
  e.in_memory = false;
  lru_.erase(e.lru);
  account_locked(e, -1);
  e.live = e.serialized = 0;
  ++counts_.spilled_keys;
  counts_.spilled_bytes += e.file_bytes;
  return true;
}

std::optional<Frame> DataStore::read_spilled_locked(Entry& e, const std::string& key) const {
  if (e.lost) return std::nullopt;
  try {
    Frame frame = read_file(e.file, e.file_bytes);
    if (crc32_of(frame) != e.checksum)
      throw std::runtime_error(fmt::format("spill file {} does not hold the bytes written "
                                           "(CRC-32 mismatch)", e.file.string()));
    return frame;
  } catch (const std::exception& ex) {
    spdlog::error("worker data store: {}; the value of '{}' is lost and will be computed again",
                  ex.what(), key);
    e.lost = true;
    ++counts_.spill_losses_total;
    return std::nullopt;
  }
}

bool DataStore::unspill_locked(Entry& e, const std::string& key) const {
  auto frame = read_spilled_locked(e, key);
  if (!frame) return false;
  // Back as bytes: decoded once, by the first task that reads it.
  hold_locked(e, key, Value(std::move(*frame)));
  --counts_.spilled_keys;
  counts_.spilled_bytes -= e.file_bytes;
  ++counts_.unspills_total;
  return true;
}

void DataStore::spill_to_target_locked() const {
  if (spill_.target_bytes == 0 || spill_.directory.empty()) return;
  bool spilled = false;
  while (counts_.memory_bytes > spill_.target_bytes && !lru_.empty()) {
    const std::string key = lru_.front();
    if (!spill_locked(data_.at(key), key)) break;
    spilled = true;
  }
  // The allocator would keep the freed pages for a while (jemalloc: seconds), and the
  // process's memory, which the worker holds to its limit, would not fall.
  if (spilled) runtime::release_free_memory();
}

std::uint64_t DataStore::spill_to(std::uint64_t memory_bytes) {
  std::lock_guard lock(mu_);
  if (spill_.directory.empty()) return 0;
  std::uint64_t spilled = 0;
  while (counts_.memory_bytes > memory_bytes && !lru_.empty()) {
    const std::string key = lru_.front();
    Entry& e = data_.at(key);
    const std::uint64_t held = e.live + e.serialized;
    if (!spill_locked(e, key)) break;
    spilled += held;
  }
  return spilled;
}

std::uint64_t DataStore::spill_oldest() {
  std::lock_guard lock(mu_);
  if (spill_.directory.empty() || lru_.empty()) return 0;
  const std::string key = lru_.front();
  Entry& e = data_.at(key);
  const std::uint64_t held = e.live + e.serialized;
  return spill_locked(e, key) ? held : 0;
}

DataStoreCounts DataStore::counts() const {
  std::lock_guard lock(mu_);
  DataStoreCounts c = counts_;
  c.keys = data_.size();
  return c;
}

std::size_t DataStore::size() const {
  std::lock_guard lock(mu_);
  return data_.size();
}

std::uint64_t DataStore::nbytes() const {
  std::lock_guard lock(mu_);
  return nbytes_;
}

std::uint64_t DataStore::nbytes(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = data_.find(key);
  return it == data_.end() ? 0 : it->second.nbytes;
}

std::vector<std::string> DataStore::keys() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  out.reserve(data_.size());
  for (const auto& [k, v] : data_) out.push_back(k);
  return out;
}

}  // namespace taskwire::worker
