#include <taskwire/comm/core/framing.hpp>
#include <taskwire/runtime/raw_codec.hpp>

#include <fmt/format.h>

namespace taskwire::comm {

using runtime::raw_codec::append_le;
using runtime::raw_codec::load_le;

void encode_prefix(const runtime::Message& message, std::vector<char>& out) {
  out.clear();
  out.reserve(8 * (1 + message.frames.size()));
  append_le<std::uint64_t>(out, message.frames.size());
  for (const auto& f : message.frames) append_le<std::uint64_t>(out, f.size());
}

namespace {

// A TLS record's header: content type 20-23 (change_cipher_spec, alert, handshake,
// application_data), then major version 3. Read as a prefix its frame count is at least 768
// (over 2^40 for a ClientHello or an alert), past the one frame a handshake message may have,
// so it is looked for only once a count has been refused.
bool is_tls_record(const char* data) {
  const auto type = static_cast<unsigned char>(data[0]);
  return type >= 20 && type <= 23 && data[1] == 3;
}

}  // namespace

PrefixStatus decode_prefix(const char* data, std::size_t n, const runtime::Limits& limits,
                           std::vector<std::uint64_t>& lengths) {
  PrefixStatus st;
  if (n < 8) return st;
  const std::uint64_t nframes = load_le<std::uint64_t>(data);
  if (nframes > limits.max_frames) {
    st.kind = PrefixStatus::violation;
    st.tls_record = is_tls_record(data);
    st.violation_text =
        st.tls_record ? "the peer speaks TLS (a TLS record came where a message belongs), and "
                        "this comm does not: give tls:// at both ends, or tcp:// at both"
                      : fmt::format("message announces {} frames, limit is {}", nframes,
                                    limits.max_frames);
    return st;
  }
  st.bytes_needed = 8 * (1 + nframes);
  if (n < st.bytes_needed) return st;
  lengths.clear();
  lengths.reserve(nframes);
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < nframes; ++i) {
    const std::uint64_t len = load_le<std::uint64_t>(data + 8 * (1 + i));
    if (len > limits.max_frame_bytes) {
      st.kind = PrefixStatus::violation;
      st.violation_text = fmt::format("frame {} announces {} bytes, limit is {}", i, len,
                                      limits.max_frame_bytes);
      return st;
    }
    // Compared before adding: with byte limits near 2^64 (configurable) the sum could wrap.
    if (len > limits.max_message_bytes - total) {
      st.kind = PrefixStatus::violation;
      st.violation_text = fmt::format("message announces more than {} bytes by frame {}, "
                                      "limit is {}", limits.max_message_bytes, i,
                                      limits.max_message_bytes);
      return st;
    }
    total += len;
    lengths.push_back(len);
  }
  st.kind = PrefixStatus::complete;
  return st;
}

std::string check_limits(const runtime::Message& message, const runtime::Limits& limits) {
  if (message.frames.size() > limits.max_frames)
    return fmt::format("message has {} frames, limit is {}", message.frames.size(),
                       limits.max_frames);
  std::uint64_t total = 0;
  for (const auto& f : message.frames) {
    if (f.size() > limits.max_frame_bytes)
      return fmt::format("a frame of {} bytes exceeds the limit of {}", f.size(),
                         limits.max_frame_bytes);
    total += f.size();
  }
  if (total > limits.max_message_bytes)
    return fmt::format("message of {} bytes exceeds the limit of {}", total,
                       limits.max_message_bytes);
  return {};
}

}  // namespace taskwire::comm
