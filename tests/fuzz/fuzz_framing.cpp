// Fuzz target: the stream framing prefix (comm/core/framing.cpp, decode_prefix), as a TCP
// connection reads it from a peer: u64 nframes, u64 length[nframes], little-endian.
// Limits: the defaults, tight ones, and byte limits as an operator may configure them.
// Invariants: a complete prefix never announces more than the limits allow; asking for more
// bytes always asks for more than were given and no more than the frame-count limit allows;
// feeding the bytes as TcpComm does (as many as the decoder asked for) ends as decoding them
// at once does; a complete prefix re-encodes (encode_prefix) to the same bytes, and the
// message it describes passes check_limits.
#include "fuzz_support.hpp"

#include <taskwire/comm/core/framing.hpp>
#include <taskwire/runtime/raw_codec.hpp>

#include <cstdint>
#include <cstring>

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

// The bytes arrive as TcpComm::advance reads them: it calls again once it holds as many
// bytes as the decoder asked for.
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
  // The byte limits an operator may set (TASKWIRE_MAX_FRAME_BYTES, TASKWIRE_MAX_MESSAGE_BYTES:
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
