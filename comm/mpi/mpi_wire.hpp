#pragma once
// What the MPI backend puts on the wire, and what its addresses look like.
//
// Addresses: mpi://RANK or mpi://RANK:PORT (port 0 when omitted), RANK in the runtime's
// private communicator. Ports let several listeners live in one rank.
//
// A connection between a connecting rank C and a listening rank L is a pair of tags on the
// runtime's communicator: C picks an id unique among its own outgoing connections, and
//   tag = kFirstTag + 2 * id + 0   carries C -> L,
//   tag = kFirstTag + 2 * id + 1   carries L -> C,
// so rank A's outgoing id 5 and rank B's outgoing id 5 never share a (source, tag) pair.
// Tag 0 is the environment's GOODBYE (MpiEnvironment::kControlTag).
//
// Every exchange on a connection's tag starts with a head message whose first byte says what
// it is. A data head carries the frame table and, packed after it, the bytes of the small
// frames (one copy beats several MPI messages at those sizes). Each large frame follows as
// its own MPI messages, zero-copy, in chunks of at most `chunk_bytes` (the sender's
// MpiPollConfig::max_chunk_bytes, announced in the head). MPI does not let messages between
// the same pair on one tag overtake each other, so all of this arrives in order, and a CLOSE
// sent after the data cannot overtake it.
//   data:    u8 kData, u64 nframes, u64 chunk_bytes, u64 entry[nframes], packed bytes
//            entry = length << 1 | 1 when the frame follows separately, length << 1 if packed
//   hello:   u8 kHello, u32 port        (C -> L, first message of a connection)
//   accept:  u8 kAccept                 (L -> C)
//   refused: u8 kRefused                (L -> C: nothing listens on that port)
//   close:   u8 kClose                  (either way, last message of that direction)
// Integers are little-endian.
#include <taskwire/comm/core/error.hpp>
#include <taskwire/runtime/raw_codec.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::comm::mpi {

inline constexpr int kFirstTag = 1;

enum Kind : unsigned char { kData = 1, kHello = 2, kAccept = 3, kRefused = 4, kClose = 5 };

/// Frames up to this size are packed into the head, as long as the packed bytes stay within
/// kMaxPackedBytes; bigger ones are sent zero-copy as messages of their own. Chosen by
/// measurement (see the figures in mpi_poller.hpp).
inline constexpr std::uint64_t kPackFrameMax = 16 * 1024;
inline constexpr std::uint64_t kMaxPackedBytes = 64 * 1024;
inline constexpr std::size_t kDataHeadFixed = 1 + 8 + 8;

/// The largest head a receiver accepts with `max_frames`: bounded before allocating.
inline std::uint64_t max_head_bytes(std::uint64_t max_frames) {
  return kDataHeadFixed + 8 * max_frames + kMaxPackedBytes;
}

// Heads are laid out with the project's little-endian codec.
using runtime::raw_codec::load_le;
using runtime::raw_codec::store_le;

/// mpi://RANK[:PORT]
struct MpiLocation {
  int rank = 0;
  std::uint32_t port = 0;

  /// Throws CommError(bad_address) naming the text.
  static MpiLocation parse(std::string_view location) {
    auto bad = [&] {
      return CommError(make_error_code(errc::bad_address),
                       fmt::format("'mpi://{}' is not an MPI address: expected mpi://RANK or "
                                   "mpi://RANK:PORT, e.g. mpi://0 or mpi://3:1",
                                   location));
    };
    MpiLocation out;
    auto colon = location.find(':');
    std::string_view r = location.substr(0, colon);
    auto [p, ec] = std::from_chars(r.data(), r.data() + r.size(), out.rank);
    if (r.empty() || ec != std::errc{} || p != r.data() + r.size() || out.rank < 0) throw bad();
    if (colon != std::string_view::npos) {
      std::string_view s = location.substr(colon + 1);
      auto [q, ec2] = std::from_chars(s.data(), s.data() + s.size(), out.port);
      if (s.empty() || ec2 != std::errc{} || q != s.data() + s.size()) throw bad();
    }
    return out;
  }
  std::string str() const {
    return port ? fmt::format("mpi://{}:{}", rank, port) : fmt::format("mpi://{}", rank);
  }
};

}  // namespace taskwire::comm::mpi
