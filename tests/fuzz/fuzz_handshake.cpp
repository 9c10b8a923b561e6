// Fuzz target: the handshake's messages (comm/core/handshake_codec.cpp), the only bytes a
// listener reads from a peer that has not yet proved it holds the token. The first input
// byte picks the decoder the bytes are fed to (HELLO, PROOF, VERDICT), as the handshake does
// at each of its steps; the rest is the message.
// Invariants: kind_of agrees with a successful decode; a decoded HELLO or PROOF re-encodes
// to exactly its bytes (each has one encoding); a decoded VERDICT re-encodes to bytes that
// decode to the same verdict, with no control character left in its reason.
#include "fuzz_support.hpp"

#include <taskwire/comm/core/handshake.hpp>
#include <taskwire/comm/core/handshake_codec.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

namespace hc = taskwire::comm::handshake_codec;

void fuzz_hello(hc::Bytes bytes) {
  const auto decoded = hc::decode_hello(bytes, taskwire::comm::kProtocolVersion);
  if (decoded.status == hc::HelloDecoded::malformed) return;
  TASKWIRE_FUZZ_CHECK(hc::kind_of(bytes) == hc::Kind::hello);
  if (decoded.status == hc::HelloDecoded::other_version) {
    TASKWIRE_FUZZ_CHECK(decoded.hello.protocol != taskwire::comm::kProtocolVersion);
    return;
  }
  const auto again = hc::encode_hello(decoded.hello);
  TASKWIRE_FUZZ_CHECK(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()));
}

void fuzz_proof(hc::Bytes bytes) {
  const auto proof = hc::decode_proof(bytes);
  if (!proof) return;
  TASKWIRE_FUZZ_CHECK(hc::kind_of(bytes) == hc::Kind::proof);
  const auto again = hc::encode_proof(*proof);
  TASKWIRE_FUZZ_CHECK(std::equal(again.begin(), again.end(), bytes.begin(), bytes.end()));
}

void fuzz_verdict(hc::Bytes bytes) {
  const auto verdict = hc::decode_verdict(bytes);
  if (!verdict) return;
  TASKWIRE_FUZZ_CHECK(hc::kind_of(bytes) == hc::Kind::verdict);
  for (unsigned char c : verdict->reason) TASKWIRE_FUZZ_CHECK(c >= 0x20 && c != 0x7f);
  const auto again = hc::encode_verdict(*verdict);
  const auto reread = hc::decode_verdict(hc::Bytes(again.data(), again.size()));
  TASKWIRE_FUZZ_CHECK(reread && reread->accepted == verdict->accepted &&
                      reread->reason == verdict->reason);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const hc::Bytes bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0: fuzz_hello(bytes); break;
    case 1: fuzz_proof(bytes); break;
    default: fuzz_verdict(bytes); break;
  }
  return 0;
}
