#pragma once
// Comm: a message-oriented, ordered, reliable channel between two endpoints.
//
// Contract shared by every backend (tests/comm/conformance checks it on each scheme):
// - async_read: at most one outstanding at a time. The handler gets the next message, or an
//   error: errc::closed once the peer closed (after every message it sent was delivered),
//   errc::aborted after a local abort(), errc::protocol for a malformed or oversized message.
// - async_write: may be called any time, from any thread; messages are queued and sent in
//   order, one in flight. The handler runs once the message is handed to the transport, or
//   with an error. Frames are shared, never copied.
// - Bounded queues: a comm holds at most Limits::max_queued_bytes (the bound) of queued
//   outgoing bytes before it makes writers wait. Queued bytes are those written and not yet
//   taken by the transport: tcp, not yet taken by the socket; mpi, not yet completed by MPI
//   (a receiver whose reader lags stops receiving, so its senders do not complete; eager
//   sends, which complete before they are received, are confirmed by a synchronous send
//   every quarter of the bound); inproc, not yet taken by the peer's reader. A write is always queued, even one whose message
//   alone is over the bound, but its handler runs only once the bytes queued ahead of it are
//   at most the bound. So a writer that waits for each handler before writing more (the way
//   to get backpressure) never holds more than the bound plus one message queued, however
//   slow its reader; one that writes without waiting is not held back (its own choice).
// - Handlers always run on executor() (a strand: one at a time per comm), never inline inside
//   the initiating call.
// - close(): graceful. Queued writes are flushed, then the peer's pending read fails with
//   errc::closed; later operations on this comm fail with errc::closed.
// - abort(): immediate, noexcept, idempotent. Queued writes and pending reads fail with
//   errc::aborted. After any error part-way through a read or write the comm aborts itself.
// - Lifetime: a Comm is held by shared_ptr; each pending operation keeps it alive. When the
//   context of its executor shuts down, the handlers it holds are destroyed unrun, as asio
//   destroys its pending operations (held_handlers.hpp).
// - bytes_received(): a progress count for inactivity deadlines (see its doc).
#include <taskwire/comm/core/error.hpp>
#include <taskwire/runtime/asio.hpp>
#include <taskwire/runtime/config.hpp>
#include <taskwire/runtime/frame.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace taskwire::comm {

using runtime::Frame;
using runtime::Message;
using ReadHandler = std::function<void(error_code, Message)>;
using WriteHandler = std::function<void(error_code)>;

/// Who is at the other end, as learned in the handshake.
struct PeerInfo {
  std::string name;
  std::string role;
  std::uint32_t protocol_version = 0;
};

class Comm {
 public:
  Comm() = default;
  virtual ~Comm() = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  virtual void async_read(ReadHandler handler) = 0;
  virtual void async_write(Message message, WriteHandler handler) = 0;
  virtual void close() = 0;
  virtual void abort() noexcept = 0;
  virtual bool closed() const noexcept = 0;
  virtual std::string local_address() const = 0;
  virtual std::string peer_address() const = 0;
  virtual asio::any_io_executor executor() const = 0;
  /// Bytes received from the peer so far, counted as they arrive, part-way through a
  /// message too: a reader that sees the count unchanged over an interval knows nothing
  /// came in meanwhile, however large the message being received (an inactivity deadline,
  /// as the worker's fetch_timeout). Any thread; non-blocking. This default counts nothing
  /// (0 always): then only whole messages show progress; tcp overrides it.
  virtual std::uint64_t bytes_received() const noexcept { return 0; }
  /// The limits incoming messages are checked against from now on, for reads started after
  /// this call (any thread; ordered with async_read). The handshake narrows them until the
  /// peer has proved itself, so that an unauthenticated peer cannot make this end allocate
  /// what it announces, then restores the configured ones. This default ignores them: for
  /// backends whose peers cannot announce sizes of their own choosing.
  virtual void set_read_limits(const runtime::Limits& limits) { (void)limits; }
  /// Destroys, unrun, every handler this comm holds (a pending read, writes held back).
  /// Called by HeldHandlers when the comm's context shuts down, its threads stopped.
  virtual void drop_held_handlers() noexcept {}

  const PeerInfo& peer() const noexcept { return peer_; }
  void set_peer(PeerInfo info) { peer_ = std::move(info); }  ///< by the handshake only

 private:
  PeerInfo peer_;
};

using CommPtr = std::shared_ptr<Comm>;

}  // namespace taskwire::comm
