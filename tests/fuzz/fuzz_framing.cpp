// Fuzz target: the stream framing prefix (comm/core/framing.cpp, decode_prefix), as a TCP
// connection reads it from a peer: u64 nframes, u64 length[nframes], little-endian.
// Limits: the defaults, tight ones, and byte limits as an operator may configure them.
// Invariants: a complete prefix never announces more than the limits allow; asking for more
// bytes always asks for more than were given and no more than the frame-count limit allows;
// feeding the bytes as a stream decoder does (as many as the decoder asked for) ends as
// decoding them at once does; a complete prefix re-encodes (encode_prefix) to the same bytes,
// and the message it describes passes check_limits. And the whole stream decoder tcp:// and
// tls:// read through (comm/core/frame_decoder.cpp): the input cut into reads of any sizes
// decodes to the same messages, within the limits, as the input read whole.
#include "fuzz_support.hpp"

#include <taskwire/comm/core/frame_decoder.hpp>
#include <taskwire/comm/core/framing.hpp>
#include <taskwire/runtime/raw_codec.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace {

using taskwire::comm::PrefixStatus;
using taskwire::runtime::Limits;

void check_status(const PrefixStatus& st, std::size_t n, const Limits& limits,
                  const std::vector<std::uint64_t>& lengths) {
  if (st.kind == PrefixStatus::need_more) {
    TASKWIRE_FUZZ_CHECK(st.bytes_needed > n);
    TASKWIRE_FUZZ_CHECK(st.bytes_needed <= 8 * (1 + limits.max_frames));
    return;
  }
  if (st.kind == PrefixStatus::violation) {
    TASKWIRE_FUZZ_CHECK(!st.violation_text.empty());
    return;
  }
  TASKWIRE_FUZZ_CHECK(st.bytes_needed <= n);
  TASKWIRE_FUZZ_CHECK(lengths.size() <= limits.max_frames);
  TASKWIRE_FUZZ_CHECK(st.bytes_needed == 8 * (1 + lengths.size()));
  unsigned __int128 total = 0;  // wider than any sum of lengths: it cannot wrap
  for (auto len : lengths) {
    TASKWIRE_FUZZ_CHECK(len <= limits.max_frame_bytes);
    total += len;
  }
  TASKWIRE_FUZZ_CHECK(total <= limits.max_message_bytes);
}

// The bytes arrive as FrameDecoder reads them: it calls again once it holds as many bytes as
// decode_prefix asked for.
void check_incremental(const char* data, std::size_t n, const Limits& limits,
                       const PrefixStatus& whole, const std::vector<std::uint64_t>& lengths) {
  std::vector<std::uint64_t> step_lengths;
  std::size_t have = 0;
  PrefixStatus st = taskwire::comm::decode_prefix(data, have, limits, step_lengths);
  while (st.kind == PrefixStatus::need_more && st.bytes_needed <= n) {
    TASKWIRE_FUZZ_CHECK(st.bytes_needed > have);  // else a reader would never progress
    have = st.bytes_needed;
    st = taskwire::comm::decode_prefix(data, have, limits, step_lengths);
  }
  TASKWIRE_FUZZ_CHECK(st.kind == whole.kind);
  TASKWIRE_FUZZ_CHECK(st.bytes_needed == whole.bytes_needed);
  if (st.kind == PrefixStatus::complete) TASKWIRE_FUZZ_CHECK(step_lengths == lengths);
}

// Limits small enough that the message a complete prefix describes can be built.
constexpr Limits kTight{.max_frames = 8, .max_frame_bytes = 64, .max_message_bytes = 128};

void check_round_trip(const char* data, const PrefixStatus& st,
                      const std::vector<std::uint64_t>& lengths) {
  taskwire::runtime::Message message;
  for (auto len : lengths) message.frames.push_back(taskwire::runtime::Frame::allocate(len));
  std::vector<char> prefix;
  taskwire::comm::encode_prefix(message, prefix);
  TASKWIRE_FUZZ_CHECK(prefix.size() == st.bytes_needed);
  TASKWIRE_FUZZ_CHECK(std::memcmp(prefix.data(), data, prefix.size()) == 0);
  TASKWIRE_FUZZ_CHECK(taskwire::comm::check_limits(message, kTight).empty());
}

// What a FrameDecoder made of a stream: each message's frames, and whether it stopped at a
// violation.
struct Decoded {
  std::vector<std::vector<std::string>> messages;
  bool violation = false;
  bool operator==(const Decoded&) const = default;
};

// Feeds `data[0..n)` to a FrameDecoder as a comm reads its stream, each read at most
// `most_per_read` bytes (a large frame's read_all is filled whole or, at the input's end, not
// at all), until the input ends or a limit is broken.
Decoded decode_stream(const char* data, std::size_t n, const Limits& limits,
                      std::size_t most_per_read) {
  taskwire::comm::FrameDecoder decoder;
  using Step = taskwire::comm::FrameDecoder::Step;
  Decoded out;
  for (std::size_t at = 0;;) {
    taskwire::runtime::Message message;
    const Step step = decoder.next(limits, message);
    if (step.kind == Step::violation) {
      TASKWIRE_FUZZ_CHECK(!step.violation_text.empty());
      out.violation = true;
      return out;
    }
    if (step.kind == Step::message) {
      TASKWIRE_FUZZ_CHECK(message.frames.size() <= limits.max_frames);
      auto& frames = out.messages.emplace_back();
      for (const auto& f : message.frames) {
        TASKWIRE_FUZZ_CHECK(f.size() <= limits.max_frame_bytes);
        frames.emplace_back(f.data(), f.size());
      }
      continue;
    }
    TASKWIRE_FUZZ_CHECK(!step.into.empty());
    if (at == n) return out;
    if (step.kind == Step::read_all) {
      if (n - at < step.into.size()) return out;
      std::memcpy(step.into.data(), data + at, step.into.size());
      at += step.into.size();
      decoder.large_received();
      continue;
    }
    const std::size_t take = std::min({step.into.size(), n - at, most_per_read});
    std::memcpy(step.into.data(), data + at, take);
    at += take;
    decoder.received(take);
  }
}

// Limits with frames above FrameDecoder::kLargeFrameBytes (read straight into), small enough
// that what a prefix announces can be allocated under the fuzzer's malloc limit.
constexpr Limits kStream{.max_frames = 16, .max_frame_bytes = 256 * 1024,
                         .max_message_bytes = 512 * 1024};

void check_stream(const char* data, std::size_t n) {
  const Decoded whole = decode_stream(data, n, kStream, n + 1);
  TASKWIRE_FUZZ_CHECK(decode_stream(data, n, kStream, 1) == whole);
  if (n > 0) {  // a read size taken from the input
    const std::size_t cut = 1 + static_cast<unsigned char>(data[n - 1]) % 61;
    TASKWIRE_FUZZ_CHECK(decode_stream(data, n, kStream, cut) == whole);
  }
}

void fuzz_with(const char* data, std::size_t n, const Limits& limits) {
  std::vector<std::uint64_t> lengths;
  const auto st = taskwire::comm::decode_prefix(data, n, limits, lengths);
  check_status(st, n, limits, lengths);
  check_incremental(data, n, limits, st, lengths);
  if (st.kind == PrefixStatus::complete && &limits == &kTight) check_round_trip(data, st, lengths);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  const auto* data = reinterpret_cast<const char*>(bytes);
  fuzz_with(data, size, Limits{});  // the defaults every connection starts with
  fuzz_with(data, size, kTight);
  check_stream(data, size);
  // The byte limits an operator may set (Limits::max_frame_bytes, TASKWIRE_MAX_MESSAGE_BYTES:
  // any u64), taken from the input's last 16 bytes.
  if (size >= 24) {
    using taskwire::runtime::raw_codec::load_le;
    Limits configured;
    configured.max_frame_bytes = load_le<std::uint64_t>(data + size - 16);
    configured.max_message_bytes = load_le<std::uint64_t>(data + size - 8);
    fuzz_with(data, size, configured);
  }
  return 0;
}
