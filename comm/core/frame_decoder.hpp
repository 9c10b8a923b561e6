#pragma once
// FrameDecoder: the receiving half of framing.hpp's codec for a byte-stream comm, without
// any I/O (sans-IO): it says which bytes it wants next, the comm reads them from its stream
// however that stream reads (tls:// reads through OpenSSL), then tells it how many came.
// Small messages are read through one buffer, so several arriving together cost one read;
// a frame above kLargeFrameBytes is allocated once (after the limits were checked) and read
// straight into. Not thread-safe: confined to its comm's strand.
#include <taskwire/runtime/config.hpp>
#include <taskwire/runtime/frame.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace taskwire::comm {

class FrameDecoder {
 public:
  static constexpr std::size_t kReadBufferBytes = 64 * 1024;
  static constexpr std::size_t kLargeFrameBytes = 32 * 1024;

  struct Step {
    enum Kind {
      message,    ///< a whole message was decoded (next()'s `out`)
      violation,  ///< the peer broke a limit: `violation_text` says which
      read,       ///< read some bytes (at least one) into `into`, then call received()
      read_all,   ///< fill `into` entirely (a large frame), then call large_received()
    } kind = read;
    std::span<char> into;
    std::string violation_text;
    /// violation: the bytes are a TLS record, not a prefix (framing.hpp's tls_record).
    bool tls_record = false;
  };

  FrameDecoder() : buffer_(kReadBufferBytes) {}

  /// Decodes what has been received so far against `limits`.
  Step next(const runtime::Limits& limits, runtime::Message& out);
  /// `n` bytes were read into the span of the last `read` step.
  void received(std::size_t n) noexcept { end_ += n; }
  /// The span of the last `read_all` step has been filled.
  void large_received();
  /// True part-way through a message (an end of stream now cuts it short). Between messages,
  /// true when received bytes are buffered (they may hold the next message whole).
  bool partial() const noexcept { return in_frames_ || end_ > begin_; }
  /// Drops any partly received message; the whole buffer, to discard input into.
  std::span<char> discard() noexcept;

 private:
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;       // unconsumed bytes are buffer_[begin_, end_)
  bool in_frames_ = false;               // past the prefix of the current message
  std::vector<std::uint64_t> lengths_;   // of the message being read
  std::vector<runtime::Frame> frames_;   // its frames read so far
  runtime::Frame large_;                 // a large frame being read straight into

  Step read_into_buffer(std::size_t bytes_needed);
};

}  // namespace taskwire::comm
