#pragma once
// The poller's state for one emulated connection (see mpi_wire.hpp): its tags, the messages
// it still has to send, the messages being received. Plain data, owned by the MpiPoller and
// touched only under the poller's mutex; the MpiComm the user holds points at it.
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/comm/mpi/mpi_wire.hpp>
#include <taskwire/runtime/config.hpp>

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace taskwire::comm::mpi {

class MpiComm;

/// What one message counts for against Limits::max_queued_bytes where it is held unread (a
/// receiver's delivered messages and MPI's buffered eager data, a sender's sends not yet
/// confirmed received): its bytes, but at least kMessageCost, for what the comm and MPI keep
/// per message whatever its size (docs/security.md, "Bounded queues", has the measurement).
inline constexpr std::uint64_t kMessageCost = 4096;
inline std::uint64_t held_cost(std::uint64_t bytes) noexcept {
  return bytes > kMessageCost ? bytes : kMessageCost;
}

/// A sender sends a data head synchronously (MPI_Issend) once the bytes it sent since the
/// last one pass the bound divided by this (see MpiPoller::needs_confirmation).
inline constexpr std::uint64_t kConfirmShare = 4;

/// A message still to be sent: the head (a control byte, or the data head with the small
/// frames packed in), then the frames listed in `separate`, each in chunks of `chunk_bytes`.
struct OutMessage {
  Message message;             ///< keeps the frames alive until every Isend completed
  WriteHandler handler;        ///< empty for control messages, and once reported
  std::shared_ptr<Comm> keep;  ///< the writing comm lives while its write is pending
  std::vector<char> head;
  std::vector<std::uint32_t> separate;
  std::uint64_t chunk_bytes = 0;
  std::size_t next_frame = 0;  ///< index into `separate` of the next chunk to post
  std::uint64_t next_offset = 0;
  unsigned outstanding = 0;  ///< posted, not completed MPI requests
  bool head_posted = false;
  bool is_close = false;
  bool all_posted() const noexcept { return head_posted && next_frame == separate.size(); }
};

/// A message being received: its head, then the chunks of its separate frames. Kept in
/// arrival order; delivered from the front once complete so order survives out-of-order
/// request completion.
struct InMessage {
  std::vector<char> head;
  bool head_done = false;
  Kind kind = kData;
  std::uint32_t hello_port = 0;
  std::vector<Frame> frames;
  std::vector<std::uint32_t> separate;  ///< indices of the frames that follow as chunks
  std::vector<std::uint64_t> sep_len;   ///< their lengths
  std::uint64_t chunk_bytes = 0;
  std::size_t next_sep = 0;
  std::uint64_t next_offset = 0;
  unsigned outstanding = 0;
  bool discard = false;  ///< receive the chunks without keeping them (limits broken, aborted)
  bool all_matched() const noexcept { return head_done && next_sep == separate.size(); }
  bool complete() const noexcept { return all_matched() && outstanding == 0; }
};

/// A matched MPI message the connection cannot receive yet (its head is still arriving).
struct Matched {
  MPI_Message message;
  MPI_Count count;
};

struct Connection {
  enum class State {
    accepting,   ///< L side, before the HELLO is read
    connecting,  ///< C side, HELLO sent, waiting for ACCEPT or REFUSED
    open,
    refused,     ///< L side answered REFUSED; retires once that is sent
  };

  int peer = 0;
  std::uint32_t id = 0;
  bool connector = false;
  int send_tag = 0, recv_tag = 0;
  State state = State::accepting;
  std::string local_address, peer_address;
  runtime::Limits limits;
  std::uint64_t max_chunk_bytes = 1u << 30;

  /// The comm's executor; set when the comm is created (L side: once the HELLO is read).
  std::optional<asio::strand<asio::any_io_executor>> strand;
  /// True while the MpiBackend (and so the Context) the comm belongs to is alive: nothing is
  /// posted to `strand` after that.
  std::shared_ptr<bool> owner;
  std::weak_ptr<MpiComm> comm;
  std::shared_ptr<MpiComm> pending_comm;  ///< C side: held until ACCEPT hands it out
  RawConnectHandler on_connect;           ///< C side, until ACCEPT/REFUSED/failure

  /// Completions for the comm's strand, in order; one run of them is scheduled at a time.
  std::vector<std::function<void()>> outbox;
  bool outbox_scheduled = false;

  std::deque<OutMessage> sendq;
  std::deque<InMessage> recvq;
  std::deque<Matched> matched;

  bool close_queued = false;  ///< our CLOSE is in sendq (or the peer is gone: none needed)
  bool close_sent = false;    ///< our CLOSE's Isend was posted
  bool peer_closed = false;   ///< the peer's CLOSE arrived (or it said GOODBYE)
  bool peer_gone = false;     ///< GOODBYE or lost: nothing more is sent to it
  bool aborted = false;       ///< local abort(), protocol or I/O failure: discard what arrives
  bool failed = false;        ///< a malformed head: what follows cannot be parsed reliably
  bool retired = false;

  /// held_cost of the data sent since the last synchronous send (see kConfirmShare).
  std::uint64_t unconfirmed = 0;

  /// Delivered, not yet read, counted with held_cost (the comm decrements). Past limits.max_queued_bytes the
  /// connection stops receiving new messages until the reader catches up: its sender's
  /// rendezvous and synchronous requests then do not complete, which holds the sender's
  /// write handlers (comm.hpp).
  std::atomic<std::uint64_t> unread{0};
  std::atomic<bool> holding{false};      ///< new messages held back until the reader resumes
};

using ConnectionPtr = std::shared_ptr<Connection>;

}  // namespace taskwire::comm::mpi
