#pragma once
// The versioned handshake every new comm goes through, on both sides: each writes a HELLO
// (magic, protocol version, serialization version, name, role, auth token), reads the peer's,
// checks it, then each writes a verdict (accept, or a refusal with the reason) and reads the
// peer's. So a mismatch is reported with a clear error on both sides, and a refused comm is
// closed. Bounded by a timeout (the comm is aborted when it passes). Checks, in order: protocol
// version, serialization version, the peer's role (when one is expected), the auth token.
#include <taskwire/comm/core/comm.hpp>
#include <taskwire/runtime/config.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace taskwire::comm {

/// 2: operation headers in runtime/wire_codec.hpp's plain layout; key_lost.
/// 3: key_cancelled carries the reason (protocol::KeysCancelled).
/// 4: register_worker says whether a nanny watches the worker; worker_died (nanny reports);
///    threads_busy, free_processing; task_erred and key_erred carry the exception type (and
///    key_erred the worker); worker_refused.
inline constexpr std::uint32_t kProtocolVersion = 4;

struct HandshakeOptions {
  std::string name;
  std::string role;
  std::string auth_token;  ///< empty: accept any peer
  /// The role the peer must announce ("scheduler" for a worker or client connecting to
  /// one); empty: any. Its own role is announced already, so checking it changes nothing on
  /// the wire: a peer of another role is refused with errc::wrong_role and a sentence
  /// naming both roles, and the peer's side reads that sentence in the refusal verdict.
  std::string expect_role;
  std::uint32_t protocol_version = kProtocolVersion;
  std::chrono::milliseconds timeout{10'000};

  static HandshakeOptions from(const runtime::Config& config);
};

/// (error, detail): on success error is empty and comm->peer() is filled in.
using HandshakeHandler = std::function<void(error_code, std::string)>;

/// Asynchronous; the handler runs on the comm's executor.
void async_handshake(const CommPtr& comm, const HandshakeOptions& options,
                     HandshakeHandler handler);

}  // namespace taskwire::comm
