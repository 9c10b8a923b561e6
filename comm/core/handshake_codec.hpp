#pragma once
// The bytes of the connection handshake, as pure functions (no I/O, no Asio), so that a fuzz
// target can feed the decoders arbitrary bytes; comm/core/handshake.cpp drives the exchange.
// Every decoder reads only inside the bytes it is given and refuses anything but one exact,
// well-formed message (no trailing bytes). Numbers are little-endian (runtime/raw_codec.hpp);
// str is a u32 length, then that many bytes (at most kMaxHandshakeField).
//
//   HELLO    "TWHS" u32 protocol, u32 serialization, str name, str role, str nonce (32 bytes),
//            u8 has_token (0 or 1)
//   PROOF    "TWPF" str mac: HMAC-SHA256 (32 bytes), or empty when the sender has no token
//   VERDICT  "TWOK" (accepted) or "TWNO" followed by the reason, to the end
//
// HELLO keeps protocol v4's layout up to its third string (v4 carried the token there, v5 the
// nonce), so a v4 peer still parses a v5 HELLO, reads the version and refuses with a version
// sentence instead of calling it garbage. decode_hello reads the protocol version right after
// the magic and reports another version before parsing the rest.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::comm::handshake_codec {

inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kMacBytes = 32;  // SHA-256
inline constexpr std::size_t kMaxHandshakeField = 1024;

using Nonce = std::array<unsigned char, kNonceBytes>;
using Mac = std::array<unsigned char, kMacBytes>;
using Bytes = std::span<const char>;

struct Hello {
  std::uint32_t protocol = 0;
  std::uint32_t serialization = 0;
  std::string name, role;  ///< longer ones are cut to kMaxHandshakeField by encode_hello
  Nonce nonce{};
  bool has_token = false;
};

struct HelloDecoded {
  enum Status { ok, other_version, malformed } status = malformed;
  /// ok: all of it; other_version: only `protocol` (the rest is not parsed).
  Hello hello;
};

struct Proof {
  std::optional<Mac> mac;  ///< empty: the sender has no token
};

struct Verdict {
  bool accepted = false;
  std::string reason;  ///< a refusal's sentence, at most kMaxHandshakeField bytes
};

/// Which message some bytes claim to be, by their magic alone.
enum class Kind { hello, proof, verdict, unknown };
Kind kind_of(Bytes bytes) noexcept;

std::vector<char> encode_hello(const Hello& hello);
HelloDecoded decode_hello(Bytes bytes, std::uint32_t expected_protocol);

std::vector<char> encode_proof(const Proof& proof);
std::optional<Proof> decode_proof(Bytes bytes);

std::vector<char> encode_verdict(const Verdict& verdict);
/// A refusal's reason comes from the peer: control characters in it become '?', so that it
/// cannot forge log lines.
std::optional<Verdict> decode_verdict(Bytes bytes);

/// Which end of the comm computes a proof: part of what the proof covers, so that a proof
/// made by one end can never pass as the other's (two workers share a role).
enum class Side : std::uint8_t { connecting = 'C', accepting = 'A' };

struct ProofInput {
  std::string_view token;  ///< the shared secret, the HMAC's key; must not be empty
  std::uint32_t protocol = 0;
  Side sender_side = Side::connecting;
  std::string_view sender_role, receiver_role;
  Nonce sender_nonce{}, receiver_nonce{};
};

/// HMAC-SHA256 keyed with the token over "taskwire-auth", the protocol version, the sender's
/// side, both roles and both nonces, the sender's first: a proof answers one handshake only
/// and cannot be reflected back to the end that sent it. Throws std::runtime_error if
/// libcrypto fails.
Mac compute_proof(const ProofInput& input);

/// Constant-time comparison (CRYPTO_memcmp).
bool same_mac(const Mac& a, const Mac& b) noexcept;

/// A fresh nonce from libcrypto's RAND_bytes; std::nullopt if it has no entropy.
std::optional<Nonce> fresh_nonce();

}  // namespace taskwire::comm::handshake_codec
