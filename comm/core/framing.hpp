#pragma once
// The framing codec shared by every byte-stream backend:
//   u64 nframes, u64 length[nframes], then the frames' bytes; little-endian.
// Limits are checked as soon as each count is known, before anything is allocated for it.
#include <taskwire/runtime/config.hpp>
#include <taskwire/runtime/frame.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace taskwire::comm {

/// Writes the prefix of `message` into `out` (cleared first).
void encode_prefix(const runtime::Message& message, std::vector<char>& out);

/// Result of decode_prefix over the bytes received so far.
struct PrefixStatus {
  enum Kind { need_more, complete, violation } kind = need_more;
  std::size_t bytes_needed = 8;  ///< prefix size once known (need_more/complete)
  std::string violation_text;    ///< what limit was broken, for the log and the error
  /// violation: the bytes are a TLS record, not a prefix (a tls:// peer at a plain comm).
  bool tls_record = false;
};

/// Parses a prefix from `data[0..n)`. On `complete`, `lengths` holds the frame sizes and
/// `bytes_needed` is the prefix length. On `need_more`, `bytes_needed` says how many prefix
/// bytes to have before calling again (bounded by the frame-count limit).
PrefixStatus decode_prefix(const char* data, std::size_t n, const runtime::Limits& limits,
                           std::vector<std::uint64_t>& lengths);

/// Checks an outgoing message against the same limits (a sender fails fast rather than
/// having the peer abort). Empty string when within limits.
std::string check_limits(const runtime::Message& message, const runtime::Limits& limits);

}  // namespace taskwire::comm
