#pragma once
// The versioned, authenticated handshake every new comm goes through, on both sides.
//  1. Each end writes a HELLO (magic, protocol version, serialization version, name, role, a
//     fresh 32-byte nonce, whether it has an auth token) and reads the peer's. It checks, in
//     order: protocol version (read right after the magic), serialization version, the peer's
//     role (when one is expected).
//  2. The connecting end writes a PROOF: HMAC-SHA256 keyed with the token over both nonces,
//     both roles, its side and the protocol version (handshake_codec.hpp). The accepting end
//     checks it (constant time) before it sends a proof of its own, so that a peer that has
//     not proved itself learns nothing computed from the token; the connecting end checks
//     that one and writes the verdict, which the accepting end reads.
//  A refusal at any step is a VERDICT with the reason, so both ends report it; a refused
//  comm is closed. The token itself never crosses the wire. An end without a token accepts
//  any peer; an end with one refuses a peer without one or with a wrong proof (errc::auth).
//  Until it is over the comm reads under kHandshakeLimits (one frame of at most 16 KiB per
//  message, a fixed number of messages), whatever the peer announces; the configured limits
//  (HandshakeOptions::limits) are restored once it succeeds. Bounded by a timeout (the comm
//  is aborted when it passes).
#include <taskwire/comm/core/comm.hpp>
#include <taskwire/runtime/config.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::comm {

/// 2: operation headers in runtime/wire_codec.hpp's plain layout; key_lost.
/// 3: key_cancelled carries the reason (protocol::KeysCancelled).
/// 4: register_worker says whether a nanny watches the worker; worker_died (nanny reports);
///    threads_busy, free_processing; task_erred and key_erred carry the exception type (and
///    key_erred the worker); worker_refused.
/// 5: challenge-response handshake: HELLO carries a nonce instead of the token, then a PROOF
///    (HMAC-SHA256 over both nonces) before the verdict.
/// 6: register_worker carries the worker's other addresses (a tcp:// door next to mpi://).
/// 7: scheduler_info and its reply; heartbeat carries the worker's memory and running tasks;
///    register_worker carries its host name.
/// 8: task_finished carries the thread that ran the task and its dependencies' transfers;
///    cancel_keys carries `force` (protocol::CancelKeys); TaskSpec (update_graph,
///    compute_task) carries the user's priority; steal_request (scheduler -> worker) and
///    steal_response (work stealing).
/// 9: TaskSpec carries resources, workers and allow_other_workers; register_worker carries
///    the worker's resources; worker_status (paused / resumed); scheduler_info_reply carries
///    each worker's resources and pause, and the tasks no worker can run.
/// 10: clients send missing_data too (a key no holder could send them; `key` empty);
///    close_worker carries its reason and whether the worker may join again; client keys
///    carry 128 random bits of their client's.
/// 11: compute_task carries an attempt id, echoed in task_finished and task_erred.
/// 12: register_worker carries the results a worker joining again kept (`held`).
/// 13: steal_request and steal_response carry the assignment's attempt.
/// 15 (14 is another branch's): scatter goes straight to workers: update_data and
///    update_data_reply (client <-> worker); update_graph carries the scattered keys' holders.
/// 16: a worker's retirement: retire_worker (worker -> scheduler), acquire_replicas
///    (scheduler -> worker) answered by add_keys; close_worker without rejoin ends a retired
///    worker; WorkerReport::retiring.
/// 17: compute_task carries small dependencies the scheduler had just received inline
///    (`given`): the worker does not fetch them.
/// 18: a client asks for workers to be retired: retire_workers, answered by
///    retire_workers_reply.
/// 19: a client asks for the bytes held to be evened out: rebalance, answered by
///    rebalance_reply.
/// 20: a task assigned ahead of inputs running on other workers: compute_task lists them
///    (`awaited`), and get_data may ask to wait for a key its worker is computing.
inline constexpr std::uint32_t kProtocolVersion = 20;

/// What a comm accepts while its peer has not authenticated: the handshake's messages are
/// one frame of a few KiB at most, so a peer announcing more is refused before anything is
/// allocated for it; the handshake reads at most three messages (48 KiB in all).
inline constexpr runtime::Limits kHandshakeLimits{1, 16u << 10, 16u << 10};

/// A refused comm is closed gracefully (the verdict reaches the peer), then aborted after
/// this long if the peer keeps it open: a refused peer holds no descriptor for long.
inline constexpr std::chrono::milliseconds kRefusedLinger{2'000};

/// What a tls:// listener's refusal of a peer that did not open with TLS (a tcp:// client)
/// says; a refusal saying it fails the refused end with errc::tls (fatal: not retried).
inline constexpr std::string_view kSpeaksTlsMark = "this port speaks TLS";

/// A refusal VERDICT saying `reason`, framed as a plain (tcp://) comm reads a message: what a
/// listener that cannot speak with its peer at all (TLS against plain) writes in place of its
/// HELLO. The connecting end reads it as a refusal, with that sentence.
std::vector<char> framed_refusal(const std::string& reason);

/// Which end of the comm this is: the one that connected, or the one that accepted.
enum class HandshakeSide { connecting, accepting };

struct HandshakeOptions {
  std::string name;
  std::string role;
  /// The shared secret; never sent, only proved (HMAC). Empty: accept any peer.
  std::string auth_token;
  /// The role the peer must announce ("scheduler" for a worker or client connecting to
  /// one); empty: any. Its own role is announced already, so checking it changes nothing on
  /// the wire: a peer of another role is refused with errc::wrong_role and a sentence
  /// naming both roles, and the peer's side reads that sentence in the refusal verdict.
  std::string expect_role;
  std::uint32_t protocol_version = kProtocolVersion;
  std::chrono::milliseconds timeout{10'000};
  /// The limits the comm reads under once the handshake has succeeded (Config::limits).
  runtime::Limits limits;

  static HandshakeOptions from(const runtime::Config& config);
};

/// (error, detail): on success error is empty and comm->peer() is filled in.
using HandshakeHandler = std::function<void(error_code, std::string)>;

/// Called on the accepting side once the peer has proved itself (or once its HELLO passed,
/// when this side has no token), before this side sends its own proof; false: the comm has
/// been dropped meanwhile (a listener's pending-handshake cap), so the handshake ends there.
using PeerAuthenticated = std::function<bool()>;

/// Asynchronous; the handler runs on the comm's executor.
void async_handshake(const CommPtr& comm, const HandshakeOptions& options, HandshakeSide side,
                     HandshakeHandler handler, PeerAuthenticated on_authenticated = {});

}  // namespace taskwire::comm
