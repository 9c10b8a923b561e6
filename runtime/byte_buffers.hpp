#pragma once
// std::streambufs over plain memory, for Boost archives: reading a frame in place, or writing
// into a caller's span (counting what did not fit). Archives built on a
// streambuf skip the std::ostream/istream and Boost.Iostreams layers, which cost a locale and
// several allocations per message.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <streambuf>
#include <vector>

namespace taskwire::runtime {

/// Reads `n` bytes at `p` (not copied; they must outlive the buffer).
class ReadBuffer : public std::streambuf {
 public:
  ReadBuffer(const char* p, std::size_t n) {
    auto* b = const_cast<char*>(p);  // the get area is never written through
    setg(b, b, b + n);
  }
};

/// Writes into [p, p + capacity) while everything fits; after the first write that does not,
/// only counts, so `size()` is what the whole output needs.
class SpanWriteBuffer : public std::streambuf {
 public:
  SpanWriteBuffer(char* p, std::size_t capacity) : base_(p), capacity_(capacity) {}
  std::size_t size() const noexcept { return size_; }
  bool fits() const noexcept { return size_ <= capacity_; }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto len = static_cast<std::size_t>(n);
    if (size_ + len <= capacity_) std::memcpy(base_ + size_, s, len);
    size_ += len;
    return n;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    xsputn(&ch, 1);
    return c;
  }

 private:
  char* base_;
  std::size_t capacity_;
  std::size_t size_ = 0;
};

}  // namespace taskwire::runtime
