#include <taskwire/comm/core/handshake_codec.hpp>

#include <taskwire/runtime/raw_codec.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace taskwire::comm::handshake_codec {
namespace {

constexpr char kHelloMagic[4] = {'T', 'W', 'H', 'S'};
constexpr char kProofMagic[4] = {'T', 'W', 'P', 'F'};
constexpr char kAccept[4] = {'T', 'W', 'O', 'K'};
constexpr char kRefuse[4] = {'T', 'W', 'N', 'O'};
constexpr std::string_view kProofLabel = "taskwire-auth";

bool starts_with(Bytes bytes, const char (&magic)[4]) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), magic, 4) == 0;
}

class Writer {
 public:
  void bytes(const void* p, std::size_t n) {
    auto c = static_cast<const char*>(p);
    out_.insert(out_.end(), c, c + n);
  }
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(std::uint32_t v) { runtime::raw_codec::append_le(out_, v); }
  void str(std::string_view s) {
    const auto n = std::min(s.size(), kMaxHandshakeField);
    u32(static_cast<std::uint32_t>(n));
    bytes(s.data(), n);
  }
  std::vector<char> take() { return std::move(out_); }

 private:
  std::vector<char> out_;
};

// Each read checks the bytes left first; nothing past the span is ever touched.
class Reader {
 public:
  explicit Reader(Bytes bytes) : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }
  bool skip(std::size_t n) {
    if (left() < n) return false;
    p_ += n;
    return true;
  }
  bool u8(std::uint8_t& v) {
    if (left() < 1) return false;
    v = static_cast<std::uint8_t>(*p_++);
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (left() < sizeof v) return false;
    v = runtime::raw_codec::load_le<std::uint32_t>(p_);
    p_ += sizeof v;
    return true;
  }
  // A string field of at most `max` bytes.
  bool str(std::string& s, std::size_t max = kMaxHandshakeField) {
    std::uint32_t n;
    if (!u32(n) || n > max || left() < n) return false;
    s.assign(p_, n);
    p_ += n;
    return true;
  }
  // A string field of exactly N bytes, or of none when `allow_empty`.
  template <std::size_t N>
  bool fixed(std::array<unsigned char, N>& out, bool& present, bool allow_empty) {
    std::uint32_t n;
    if (!u32(n)) return false;
    present = n != 0;
    if (!present) return allow_empty;
    if (n != N || left() < N) return false;
    std::memcpy(out.data(), p_, N);
    p_ += N;
    return true;
  }
  std::string rest() {
    std::string s(p_, end_);
    p_ = end_;
    return s;
  }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace

Kind kind_of(Bytes bytes) noexcept {
  if (starts_with(bytes, kHelloMagic)) return Kind::hello;
  if (starts_with(bytes, kProofMagic)) return Kind::proof;
  if (starts_with(bytes, kAccept) || starts_with(bytes, kRefuse)) return Kind::verdict;
  return Kind::unknown;
}

std::vector<char> encode_hello(const Hello& hello) {
  Writer w;
  w.bytes(kHelloMagic, 4);
  w.u32(hello.protocol);
  w.u32(hello.serialization);
  w.str(hello.name);
  w.str(hello.role);
  w.str(std::string_view(reinterpret_cast<const char*>(hello.nonce.data()), kNonceBytes));
  w.u8(hello.has_token ? 1 : 0);
  return w.take();
}

HelloDecoded decode_hello(Bytes bytes, std::uint32_t expected_protocol) {
  HelloDecoded out;
  if (!starts_with(bytes, kHelloMagic)) return out;
  Reader r(bytes);
  r.skip(4);
  Hello& h = out.hello;
  if (!r.u32(h.protocol)) return out;
  if (h.protocol != expected_protocol) {
    out.status = HelloDecoded::other_version;
    return out;
  }
  bool has_nonce = false;
  std::uint8_t has_token = 2;
  if (!r.u32(h.serialization) || !r.str(h.name) || !r.str(h.role) ||
      !r.fixed(h.nonce, has_nonce, false) || !r.u8(has_token) || has_token > 1 || r.left() != 0)
    return HelloDecoded{};
  h.has_token = has_token == 1;
  out.status = HelloDecoded::ok;
  return out;
}

std::vector<char> encode_proof(const Proof& proof) {
  Writer w;
  w.bytes(kProofMagic, 4);
  if (proof.mac)
    w.str(std::string_view(reinterpret_cast<const char*>(proof.mac->data()), kMacBytes));
  else
    w.u32(0);
  return w.take();
}

std::optional<Proof> decode_proof(Bytes bytes) {
  if (!starts_with(bytes, kProofMagic)) return std::nullopt;
  Reader r(bytes);
  r.skip(4);
  Mac mac{};
  bool present = false;
  if (!r.fixed(mac, present, true) || r.left() != 0) return std::nullopt;
  Proof proof;
  if (present) proof.mac = mac;
  return proof;
}

std::vector<char> encode_verdict(const Verdict& verdict) {
  Writer w;
  w.bytes(verdict.accepted ? kAccept : kRefuse, 4);
  if (!verdict.accepted)
    w.bytes(verdict.reason.data(), std::min(verdict.reason.size(), kMaxHandshakeField));
  return w.take();
}

std::optional<Verdict> decode_verdict(Bytes bytes) {
  Verdict v;
  if (starts_with(bytes, kAccept)) {
    if (bytes.size() != 4) return std::nullopt;
    v.accepted = true;
    return v;
  }
  if (!starts_with(bytes, kRefuse) || bytes.size() - 4 > kMaxHandshakeField) return std::nullopt;
  Reader r(bytes);
  r.skip(4);
  v.reason = r.rest();
  for (char& c : v.reason)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return v;
}

Mac compute_proof(const ProofInput& in) {
  if (in.token.empty()) throw std::invalid_argument("compute_proof: the token is empty");
  Writer w;
  w.bytes(kProofLabel.data(), kProofLabel.size());
  w.u32(in.protocol);
  w.u8(static_cast<std::uint8_t>(in.sender_side));
  w.str(in.sender_role);  // length-prefixed: "ab","c" and "a","bc" must differ
  w.str(in.receiver_role);
  w.bytes(in.sender_nonce.data(), kNonceBytes);
  w.bytes(in.receiver_nonce.data(), kNonceBytes);
  const auto data = w.take();
  Mac mac{};
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), in.token.data(), static_cast<int>(in.token.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(),
            &length) ||
      length != kMacBytes)
    throw std::runtime_error("libcrypto could not compute the handshake's HMAC-SHA256");
  return mac;
}

bool same_mac(const Mac& a, const Mac& b) noexcept {
  return CRYPTO_memcmp(a.data(), b.data(), kMacBytes) == 0;
}

std::optional<Nonce> fresh_nonce() {
  Nonce n;
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) return std::nullopt;
  return n;
}

}  // namespace taskwire::comm::handshake_codec
