#include <taskwire/comm/core/frame_decoder.hpp>

#include <taskwire/comm/core/framing.hpp>

#include <cstring>

namespace taskwire::comm {

FrameDecoder::Step FrameDecoder::next(const runtime::Limits& limits, runtime::Message& out) {
  for (;;) {
    const char* data = buffer_.data() + begin_;
    const std::size_t avail = end_ - begin_;
    if (!in_frames_) {
      const auto st = decode_prefix(data, avail, limits, lengths_);
      if (st.kind == PrefixStatus::violation)
        return Step{Step::violation, {}, st.violation_text, st.tls_record};
      if (st.kind == PrefixStatus::need_more) return read_into_buffer(st.bytes_needed);
      begin_ += st.bytes_needed;
      frames_.clear();
      frames_.reserve(lengths_.size());
      in_frames_ = true;
      continue;
    }
    if (frames_.size() == lengths_.size()) {
      in_frames_ = false;
      out = runtime::Message(std::move(frames_));
      frames_ = {};
      return Step{Step::message, {}, {}, false};
    }
    const std::uint64_t len = lengths_[frames_.size()];  // bounded by decode_prefix
    if (len == 0) {
      frames_.emplace_back();
    } else if (len <= avail) {
      frames_.push_back(runtime::Frame::copy_of(data, len));
      begin_ += len;
    } else if (len > kLargeFrameBytes) {
      large_ = runtime::Frame::allocate(len);
      std::memcpy(large_.mutable_data(), data, avail);
      begin_ = end_ = 0;
      return Step{Step::read_all, {large_.mutable_data() + avail, len - avail}, {}, false};
    } else {
      return read_into_buffer(len);
    }
  }
}

// Leftovers move to the front so one read can bring in as much as the buffer holds. The
// buffer grows only for a prefix longer than it, which decode_prefix bounded by max_frames.
FrameDecoder::Step FrameDecoder::read_into_buffer(std::size_t bytes_needed) {
  if (begin_ > 0) {
    if (end_ > begin_) std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buffer_.size() < bytes_needed) buffer_.resize(bytes_needed);
  return Step{Step::read, {buffer_.data() + end_, buffer_.size() - end_}, {}, false};
}

void FrameDecoder::large_received() {
  frames_.push_back(std::move(large_));
  large_ = runtime::Frame();
}

std::span<char> FrameDecoder::discard() noexcept {
  begin_ = end_ = 0;
  in_frames_ = false;
  frames_.clear();  // not large_: a read still in flight may be writing into it
  return {buffer_.data(), buffer_.size()};
}

}  // namespace taskwire::comm
