// The handshake's codec (comm/core/handshake_codec.hpp): round trips, refusal of truncated,
// padded and garbled input, what a proof covers, and how protocol v4 and v5 see each other.
#include <taskwire/comm/core/handshake.hpp>
#include <taskwire/comm/core/handshake_codec.hpp>
#include <taskwire/runtime/raw_codec.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace codec = taskwire::comm::handshake_codec;
namespace raw = taskwire::runtime::raw_codec;
using taskwire::comm::kProtocolVersion;

namespace {

codec::Nonce nonce_of(unsigned char seed) {
  codec::Nonce n;
  for (std::size_t i = 0; i < n.size(); ++i) n[i] = static_cast<unsigned char>(seed + i);
  return n;
}

codec::Hello sample_hello() {
  return {kProtocolVersion, 19, "worker-7", "worker", nonce_of(3), true};
}

void append_str(std::vector<char>& out, std::string_view s) {
  raw::append_le(out, static_cast<std::uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

// A HELLO as protocol v4 laid it out: magic, protocol, serialization, name, role, token.
std::vector<char> v4_hello(std::string_view token) {
  std::vector<char> out{'T', 'W', 'H', 'S'};
  raw::append_le(out, std::uint32_t{4});
  raw::append_le(out, std::uint32_t{19});
  append_str(out, "old-client");
  append_str(out, "client");
  append_str(out, token);
  return out;
}

// How a v4 peer parsed a HELLO (its decode_hello, restated): the fields in order, strings
// of at most 1024 bytes, trailing bytes ignored. Returns the protocol version it would see.
std::optional<std::uint32_t> v4_parse(const std::vector<char>& m) {
  std::size_t at = 4;
  if (m.size() < 4 || std::memcmp(m.data(), "TWHS", 4) != 0) return std::nullopt;
  std::uint32_t protocol = 0, serialization = 0;
  auto u32 = [&](std::uint32_t& v) {
    if (m.size() - at < 4) return false;
    v = raw::load_le<std::uint32_t>(m.data() + at);
    at += 4;
    return true;
  };
  auto str = [&] {
    std::uint32_t n;
    if (!u32(n) || n > 1024 || m.size() - at < n) return false;
    at += n;
    return true;
  };
  if (!u32(protocol) || !u32(serialization) || !str() || !str() || !str()) return std::nullopt;
  return protocol;
}

codec::Bytes bytes(const std::vector<char>& v) { return {v.data(), v.size()}; }

// Every proper prefix of `encoded`, and `encoded` with a byte more, is refused.
void check_exact_length(const std::vector<char>& encoded,
                        const std::function<bool(codec::Bytes)>& accepts) {
  REQUIRE(accepts(bytes(encoded)));
  for (std::size_t n = 0; n < encoded.size(); ++n) {
    INFO("prefix of " << n << " bytes of " << encoded.size());
    CHECK_FALSE(accepts(codec::Bytes(encoded.data(), n)));
  }
  auto longer = encoded;
  longer.push_back('x');
  CHECK_FALSE(accepts(bytes(longer)));
}

bool hello_ok(codec::Bytes b) {
  return codec::decode_hello(b, kProtocolVersion).status == codec::HelloDecoded::ok;
}

}  // namespace

TEST_CASE("handshake codec: HELLO round trips, and every truncation or padding is refused",
          "[security]") {
  const auto hello = sample_hello();
  const auto encoded = codec::encode_hello(hello);
  const auto decoded = codec::decode_hello(bytes(encoded), kProtocolVersion);
  REQUIRE(decoded.status == codec::HelloDecoded::ok);
  CHECK(decoded.hello.protocol == hello.protocol);
  CHECK(decoded.hello.serialization == hello.serialization);
  CHECK(decoded.hello.name == hello.name);
  CHECK(decoded.hello.role == hello.role);
  CHECK(decoded.hello.nonce == hello.nonce);
  CHECK(decoded.hello.has_token);
  CHECK(codec::kind_of(bytes(encoded)) == codec::Kind::hello);
  check_exact_length(encoded, hello_ok);

  auto no_token = hello;
  no_token.has_token = false;
  CHECK_FALSE(codec::decode_hello(bytes(codec::encode_hello(no_token)), kProtocolVersion)
                  .hello.has_token);
}

TEST_CASE("handshake codec: a garbled HELLO is refused", "[security]") {
  const auto good = codec::encode_hello(sample_hello());
  auto with = [&](std::size_t at, char byte) {
    auto m = good;
    m.at(at) = byte;
    return m;
  };
  const std::size_t name_len = 12, role_len = name_len + 4 + 8, nonce_len = role_len + 4 + 6;
  CHECK_FALSE(hello_ok(bytes(with(0, 'X'))));                  // magic
  CHECK_FALSE(hello_ok(bytes(with(name_len, char(0xff)))));    // name longer than the message
  CHECK_FALSE(hello_ok(bytes(with(role_len, 7))));             // role length off by one
  CHECK_FALSE(hello_ok(bytes(with(nonce_len, 31))));           // a nonce of 31 bytes
  CHECK_FALSE(hello_ok(bytes(with(good.size() - 1, 2))));      // has_token neither 0 nor 1
  CHECK(hello_ok(bytes(with(name_len + 4, 'W'))));             // a byte of the name: fine

  // A name of 1025 bytes (more than a field may hold) is refused even when it is all there.
  std::vector<char> big{'T', 'W', 'H', 'S'};
  raw::append_le(big, kProtocolVersion);
  raw::append_le(big, std::uint32_t{19});
  append_str(big, std::string(codec::kMaxHandshakeField + 1, 'n'));
  CHECK_FALSE(hello_ok(bytes(big)));
  // Every single-byte change decodes or is refused, never reads outside (ASan would say).
  for (std::size_t i = 0; i < good.size(); ++i)
    for (int b : {0x00, 0x7f, 0xff}) (void)codec::decode_hello(bytes(with(i, char(b))), 5);
}

TEST_CASE("handshake codec: PROOF and VERDICT round trip, and malformed ones are refused",
          "[security]") {
  codec::Mac mac;
  for (std::size_t i = 0; i < mac.size(); ++i) mac[i] = static_cast<unsigned char>(0xa0 + i);
  const auto with_mac = codec::encode_proof({mac});
  auto proof = codec::decode_proof(bytes(with_mac));
  REQUIRE(proof);
  REQUIRE(proof->mac);
  CHECK(*proof->mac == mac);
  check_exact_length(with_mac, [](codec::Bytes b) { return codec::decode_proof(b).has_value(); });
  const auto without = codec::encode_proof({});
  proof = codec::decode_proof(bytes(without));
  REQUIRE(proof);
  CHECK_FALSE(proof->mac);
  auto short_mac = with_mac;
  short_mac[4] = 31;  // a 31-byte MAC
  short_mac.pop_back();
  CHECK_FALSE(codec::decode_proof(bytes(short_mac)));
  CHECK(codec::kind_of(bytes(with_mac)) == codec::Kind::proof);

  const auto accept = codec::encode_verdict({true, {}});
  CHECK(codec::decode_verdict(bytes(accept))->accepted);
  auto padded = accept;
  padded.push_back('!');
  CHECK_FALSE(codec::decode_verdict(bytes(padded)));
  const auto refuse = codec::encode_verdict({false, "a wrong auth token\nFAKE LOG LINE"});
  const auto refusal = codec::decode_verdict(bytes(refuse));
  REQUIRE(refusal);
  CHECK_FALSE(refusal->accepted);
  CHECK(refusal->reason == "a wrong auth token?FAKE LOG LINE");  // no forged log line
  CHECK(codec::kind_of(bytes(refuse)) == codec::Kind::verdict);
  CHECK_FALSE(codec::decode_verdict(codec::Bytes(refuse.data(), 3)));
  std::vector<char> long_reason{'T', 'W', 'N', 'O'};
  long_reason.resize(4 + codec::kMaxHandshakeField + 1, 'r');
  CHECK_FALSE(codec::decode_verdict(bytes(long_reason)));
  CHECK(codec::kind_of(codec::Bytes("TW", 2)) == codec::Kind::unknown);
}

TEST_CASE("handshake codec: a proof changes with every input it covers", "[security]") {
  const codec::ProofInput base{"s3cret", kProtocolVersion, codec::Side::connecting, "client",
                               "scheduler", nonce_of(1), nonce_of(100)};
  const auto reference = codec::compute_proof(base);
  CHECK(codec::same_mac(reference, codec::compute_proof(base)));  // deterministic
  std::vector<std::pair<const char*, codec::ProofInput>> variants;
  auto vary = [&](const char* what, auto change) {
    auto in = base;
    change(in);
    variants.emplace_back(what, in);
  };
  vary("token", [](auto& in) { in.token = "s3creT"; });
  vary("protocol", [](auto& in) { in.protocol = kProtocolVersion + 1; });
  vary("side", [](auto& in) { in.sender_side = codec::Side::accepting; });
  vary("sender role", [](auto& in) { in.sender_role = "worker"; });
  vary("receiver role", [](auto& in) { in.receiver_role = "worker"; });
  vary("role boundary", [](auto& in) { in.sender_role = "clients"; in.receiver_role = "cheduler"; });
  vary("sender nonce", [](auto& in) { in.sender_nonce[31] ^= 1; });
  vary("receiver nonce", [](auto& in) { in.receiver_nonce[0] ^= 0x80; });
  vary("nonces swapped", [](auto& in) { std::swap(in.sender_nonce, in.receiver_nonce); });
  for (const auto& [what, in] : variants) {
    INFO(what);
    CHECK_FALSE(codec::same_mac(reference, codec::compute_proof(in)));
  }
  CHECK_THROWS(codec::compute_proof({"", kProtocolVersion, codec::Side::connecting, "a", "b",
                                     nonce_of(1), nonce_of(2)}));
  const auto n1 = codec::fresh_nonce(), n2 = codec::fresh_nonce();
  REQUIRE(n1);
  REQUIRE(n2);
  CHECK(*n1 != *n2);
}

TEST_CASE("handshake codec: v4 and v5+ HELLOs each read the other's version", "[security]") {
  // A v4 HELLO, token and all: v5 and later report the version before parsing the rest.
  const auto old = codec::decode_hello(bytes(v4_hello("s3cret")), kProtocolVersion);
  CHECK(old.status == codec::HelloDecoded::other_version);
  CHECK(old.hello.protocol == 4);
  // A v5+ HELLO (v6 changed only register_worker) as a v4 peer parses it: it finds the
  // version (and so refuses with a version sentence, not "not a taskwire handshake").
  const auto v4_sees = v4_parse(codec::encode_hello(sample_hello()));
  REQUIRE(v4_sees);
  CHECK(*v4_sees == kProtocolVersion);
  CHECK(kProtocolVersion >= 5);
}
