#include <taskwire/runtime/value.hpp>

namespace taskwire::runtime::detail {

// Serializing a live object happens outside the lock: it is immutable, and a reader that
// decodes or a spill that waits for the lock should not wait for an 8 MiB encode.
Frame ValueCell::bytes() const {
  std::shared_ptr<const void> object;
  LiveType type{nullptr, nullptr};
  {
    std::lock_guard lock(mu_);
    if (has_bytes_) return bytes_;
    object = object_;
    type = type_;
  }
  return object ? type.serialize(object.get()) : Frame();
}

std::uint64_t ValueCell::size() const {
  std::lock_guard lock(mu_);
  return object_ ? live_nbytes_ : bytes_.size();
}

std::uint64_t ValueCell::live_bytes() const {
  std::lock_guard lock(mu_);
  return object_ ? live_nbytes_ : 0;
}

std::uint64_t ValueCell::serialized_bytes() const {
  std::lock_guard lock(mu_);
  return has_bytes_ ? bytes_.size() : 0;
}

void ValueCell::mark_held(std::string key) {
  std::lock_guard lock(mu_);
  held_ = true;
  key_ = std::move(key);
}

std::string ValueCell::key_if_both_forms() const {
  std::lock_guard lock(mu_);
  return object_ && has_bytes_ ? key_ : std::string();
}

bool ValueCell::drop_bytes_if_live() {
  Frame dropped;  // freed outside the lock
  std::lock_guard lock(mu_);
  if (!object_ || !has_bytes_) return false;
  dropped = std::move(bytes_);
  bytes_ = Frame();
  has_bytes_ = false;
  return true;
}

}  // namespace taskwire::runtime::detail
