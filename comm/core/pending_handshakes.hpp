#pragma once
// The connections a listener has accepted whose handshake is not over yet (tls://: its TLS
// handshake, then the taskwire handshake of connect.hpp), capped per listener. A comm that
// would exceed the cap makes room by aborting the OLDEST pending one of the source host
// with the most in handshake (counting the newcomer; its own host on a tie), not by being
// refused itself: a burst of peers that connect and stay silent then cannot keep a real peer
// that comes after them waiting for their handshake timeouts, a flooding host evicts only
// its own comms, and a legitimate burst from one host (many workers on one node) is not cut
// below the cap. Authenticated comms are never counted or touched. Evictions are
// logged at debug, plus a warning at most every kSummaryInterval saying how many and from
// where. Thread-safe (one mutex).
#include <taskwire/comm/core/comm.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace taskwire::comm {

class PendingHandshakes : public std::enable_shared_from_this<PendingHandshakes> {
 public:
  struct Entry;
  using Ticket = std::shared_ptr<Entry>;
  static constexpr std::chrono::seconds kSummaryInterval{5};

  /// The summary timer runs on `executor`.
  PendingHandshakes(asio::any_io_executor executor, std::size_t max_pending);

  /// Counts `comm` as in handshake, first aborting the oldest pending comms it displaces.
  Ticket admit(const CommPtr& comm);
  /// The same for a connection that is not a comm yet (a TLS handshake): from `peer_address`
  /// at the listener `local_address`; `abort` ends it, from any thread, and is called at most
  /// once, outside the lock.
  Ticket admit(const std::string& peer_address, const std::string& local_address,
               std::function<void()> abort);
  /// The comm's peer has authenticated or its handshake is over: it no longer counts
  /// (idempotent). True if it had been evicted before (its failure is then no news).
  bool finish(const Ticket& ticket);
  /// Stops the summary timer and aborts the comms still in handshake (the listener closes);
  /// later admits still work.
  void stop();

  /// The source host of a peer address ("tcp://10.0.0.5:4242" -> "10.0.0.5"); the whole
  /// address when it has no host part.
  static std::string source_host(const std::string& peer_address);

 private:
  // mu_ held; pending_ not empty
  std::map<std::uint64_t, Ticket>::iterator pick_victim(const std::string& newcomer_host);
  void note_eviction(const std::string& host);  // mu_ held
  void on_summary_timer();
  void restart_summary();  // mu_ held: clears the counts, fires again in kSummaryInterval

  std::mutex mu_;
  asio::steady_timer summary_timer_;
  std::string listener_;  // "listener at ADDRESS", from the first comm's local address
  const std::size_t max_pending_;
  std::uint64_t next_seq_ = 0;
  std::map<std::uint64_t, Ticket> pending_;  // oldest first
  // Evictions since the last warning, by host (at most kMaxHostsNamed named).
  std::map<std::string, std::uint64_t> evicted_by_host_;
  std::uint64_t evicted_elsewhere_ = 0, evicted_total_ = 0;
  bool summary_armed_ = false, stopped_ = false;
};

}  // namespace taskwire::comm
