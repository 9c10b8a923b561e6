#pragma once
// connect() and listen(): what scheduler, worker, client and benchmarks use. They see only
// these, the Comm interface and the Registry, never a concrete backend.
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/comm/core/handshake.hpp>
#include <taskwire/comm/core/registry.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace taskwire::comm {

/// (error, detail, comm): detail is a full sentence for logs and exceptions.
using ConnectHandler = std::function<void(error_code, std::string, CommPtr)>;
/// Receives each accepted comm after a successful handshake, on the context's executor.
using AcceptHandler = std::function<void(CommPtr)>;

/// Told of each peer whose handshake failed: (error, detail, peer address).
using RejectHandler = std::function<void(error_code, std::string, std::string)>;

/// ConnectOptions::timeout meaning "keep trying until cancelled" (a daemon waiting for its
/// scheduler, as dask-worker does).
inline constexpr std::chrono::milliseconds kNoTimeout = std::chrono::milliseconds::max();

struct ConnectOptions {
  /// 0: the context's config().connect_timeout; kNoTimeout: until it succeeds, fails
  /// fatally or is cancelled (PendingConnect).
  std::chrono::milliseconds timeout{0};
  /// Default: HandshakeOptions::from(config). Set expect_role in it to refuse a peer of
  /// another role (errc::wrong_role).
  std::optional<HandshakeOptions> handshake;
  /// Keep trying while nothing listens at the address (a server still starting). False for a
  /// peer that should be listening already: a refusal then fails at once.
  bool retry_refused = true;
  /// While retrying, log "waiting for WAITING_FOR at ADDRESS (N s): LAST ERROR" at info level
  /// every kWaitLogInterval, e.g. "the scheduler"; empty: retry silently.
  std::string waiting_for;
};

inline constexpr std::chrono::seconds kWaitLogInterval{5};

/// Returned by async_connect. cancel() ends the attempt with errc::aborted if it is still
/// pending (the handler runs once either way); thread-safe, a no-op once it has finished.
class PendingConnect {
 public:
  PendingConnect() = default;
  explicit PendingConnect(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
  void cancel() const {
    if (cancel_) cancel_();
  }

 private:
  std::function<void()> cancel_;
};

struct ListenOptions {
  std::optional<HandshakeOptions> handshake;  ///< default: HandshakeOptions::from(config)
  RejectHandler on_reject;                    ///< optional; rejections are logged regardless
  /// Comms still in their handshake at once on this listener. A comm over the cap makes
  /// room by aborting the oldest pending one of the source host with the most pending
  /// (pending_handshakes.hpp), so that peers which connect and stay silent cannot keep a
  /// real one out. Not applied to mpi:// and inproc:// (their peers are this job's processes).
  std::size_t max_pending_handshakes = 64;
};

/// Asynchronous. Retries with jittered exponential backoff (10 ms doubling, at most 1 s,
/// +-50 % jitter) until the timeout passes; fatal errors (version, auth, protocol, bad
/// address, unknown host, wrong role, unknown scheme) fail at once. Then runs the handshake.
/// The handler runs on the context's executor.
PendingConnect async_connect(Registry& registry, const std::string& address,
                             ConnectOptions options, ConnectHandler handler);

/// Blocking form of async_connect; throws CommError with a sentence saying what failed.
/// Must not be called from the context's own threads (it waits for them).
CommPtr connect(Registry& registry, const std::string& address, ConnectOptions options = {});
CommPtr connect(Registry& registry, const std::string& address,
                std::chrono::milliseconds timeout);

/// Starts listening at `address`; each peer is handshaken before `on_comm` sees it (failed
/// handshakes are logged with the peer's address and reported to options.on_reject).
/// Throws CommError. Destroying the listener stops it; `on_comm` is never called after that.
std::unique_ptr<Listener> listen(Registry& registry, const std::string& address,
                                 AcceptHandler on_comm, ListenOptions options = {});

/// Blocking helpers for tests, benchmarks and simple clients (not from context threads).
/// Throw CommError; with a timeout, one of errc::timeout when the operation has not completed
/// by then, after aborting the comm (a peer that stopped answering, say).
Message read_sync(const CommPtr& comm, std::optional<std::chrono::milliseconds> timeout = {});
void write_sync(const CommPtr& comm, Message message,
                std::optional<std::chrono::milliseconds> timeout = {});

}  // namespace taskwire::comm
