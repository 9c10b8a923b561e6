#pragma once
// Frames and messages: the unit every Comm moves.
//
// A Frame is an immutable, reference-counted byte buffer: copying a Frame never copies bytes,
// so a payload can be queued on several comms, held in a data store and written with
// scatter-gather I/O without a copy. A Message is an ordered list of frames; by protocol
// convention frames[0] is the header and the rest are opaque payloads.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::runtime {

class Frame {
 public:
  Frame() = default;
  /// Takes ownership of `bytes` (no copy).
  explicit Frame(std::vector<char> bytes) : size_(bytes.size()) {
    auto v = std::make_shared<const std::vector<char>>(std::move(bytes));
    data_ = std::shared_ptr<const char>(v, v->data());
  }
  explicit Frame(std::string_view s) : Frame(std::vector<char>(s.begin(), s.end())) {}

  /// Allocates an uninitialised buffer of `n` bytes (not zero-filled: a receiver overwrites
  /// it, and zero-filling 16 MiB costs milliseconds); fill it through `mutable_data()` before
  /// sharing the frame. Used by receivers that read straight into the frame. Unless jemalloc
  /// serves malloc, buffers of kCachedFrameBytes and more are kept for reuse once freed
  /// (frame.cpp).
  static Frame allocate(std::size_t n);
  static constexpr std::size_t kCachedFrameBytes = std::size_t{16} << 20;
  static Frame copy_of(const void* p, std::size_t n) {
    auto f = allocate(n);
    if (n) std::memcpy(f.mutable_data(), p, n);
    return f;
  }

  const char* data() const noexcept { return data_.get(); }
  char* mutable_data() noexcept { return mut_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size() == 0; }
  std::string_view view() const noexcept { return {data(), size()}; }

 private:
  std::shared_ptr<const char> data_;
  std::size_t size_ = 0;
  char* mut_ = nullptr;  // only set by allocate(); the writer fills it once
};

struct Message {
  std::vector<Frame> frames;

  Message() = default;
  explicit Message(std::vector<Frame> f) : frames(std::move(f)) {}
  std::size_t total_bytes() const noexcept {
    std::size_t n = 0;
    for (const auto& f : frames) n += f.size();
    return n;
  }
};

}  // namespace taskwire::runtime
