#pragma once
// Process-wide configuration every layer reads. Plain data with a documented default per field;
// `from_env()` overlays TASKWIRE_* environment variables.
#include <chrono>
#include <cstdint>
#include <string>

namespace taskwire::runtime {

/// Bounds a receiver checks before allocating anything for an incoming message, and the
/// bound on what a comm holds queued (comm/core/comm.hpp, "Bounded queues").
struct Limits {
  std::uint64_t max_frames = 1u << 16;                    ///< frames per message
  std::uint64_t max_frame_bytes = std::uint64_t{16} << 30;    ///< bytes in one frame (16 GiB)
  std::uint64_t max_message_bytes = std::uint64_t{32} << 30;  ///< bytes in one message (32 GiB)
  /// Bytes written on a comm and not yet taken by the transport (or, in process, by the
  /// peer's reader) past which a write's handler waits (64 MiB; docs/security.md).
  std::uint64_t max_queued_bytes = std::uint64_t{64} << 20;
};

struct MpiPollConfig {
  std::chrono::microseconds sleep_cap{1000}; ///< longest idle sleep (doubling from 1 us)
  /// The comm layer's poller keeps polling (no sleep) this long after any progress. -1:
  /// automatic, 100 us, or 0 when this host runs more ranks than it has cores and every
  /// peer can wake this rank (spinning ranks would then take the cores the others need).
  std::chrono::microseconds spin_after_progress{-1};
  /// Past spin_after_progress, the poller still polls this long after progress while the
  /// host has a free core (no more runnable tasks, per /proc/loadavg, than the cores this
  /// process may use), giving up its core between polls (sched_yield): a reply that comes
  /// meanwhile needs no wake-up. 0: sleep at once.
  std::chrono::microseconds yield_after_progress{50};
  /// Poll-and-yield without checking for a free core: for client processes (not one that is
  /// also the scheduler), whose own thread that is about to wait for a result still counts as
  /// runnable when the poller checks.
  bool yield_unchecked = false;
  std::uint64_t max_chunk_bytes = 1u << 30;  ///< messages above this are sent in chunks
};

struct Config {
  std::string name;        ///< this process's name in handshakes and logs (default: "pid-N")
  std::string role = "process";  ///< scheduler, worker, client, bench, test...
  /// When set, peers must prove they hold the same token (it never crosses the wire).
  std::string auth_token;
  /// tls:// (comm/tls/tls_context.hpp). PEM files. The CA file verifies servers (the
  /// system's CAs without one) and, on a listener, makes client certificates required and
  /// verified against it (mutual TLS).
  std::string tls_ca_file;
  /// This end's certificate (chain) and its private key: required to listen on tls://;
  /// presented by clients when set.
  std::string tls_cert_file;
  std::string tls_key_file;
  Limits limits;
  std::chrono::milliseconds connect_timeout{10'000};
  /// How long an accepted or connected comm may take to finish its handshake (a silent peer
  /// is dropped then).
  std::chrono::milliseconds handshake_timeout{10'000};
  /// Protocol version this process announces in handshakes; 0 means the built-in one.
  /// Tests set it to exercise version mismatches.
  std::uint32_t protocol_version_override = 0;
  MpiPollConfig mpi;
  /// A client's thread that waits for results (get, wait, as_completed) runs the client's
  /// event loop itself (runtime::Context::Drive), so that a reply wakes it directly.
  bool client_drive = true;
  /// After such a wait the client's io thread stays parked this long, so that the next
  /// submission and wait run on the calling thread alone (Context::enable_driving).
  std::chrono::microseconds client_drive_linger{1000};

  /// Defaults overlaid with TASKWIRE_AUTH_TOKEN, TASKWIRE_TLS_CA_FILE, TASKWIRE_TLS_CERT,
  /// TASKWIRE_TLS_KEY, TASKWIRE_CONNECT_TIMEOUT_MS, TASKWIRE_HANDSHAKE_TIMEOUT_MS,
  /// TASKWIRE_MPI_YIELD_US, TASKWIRE_MAX_MESSAGE_BYTES, TASKWIRE_MAX_QUEUED_BYTES
  /// (docs/configuration.md; the other fields are set in code only). A malformed value
  /// throws std::invalid_argument naming the variable.
  static Config from_env();
};

}  // namespace taskwire::runtime
