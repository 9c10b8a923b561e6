#pragma once
// comm::mpi::WakeBoard: lets a rank wake another rank on the same host whose MPI poller sleeps.
//
// MPI gives an event loop no file descriptor to wait on, so an idle rank polls with a
// growing sleep, and a message to a sleeping rank waited for the end of its sleep: a
// millisecond per hop in a cluster whose ranks take turns (client -> scheduler -> worker ->
// scheduler -> client), and a CPU cost for every idle wake-up. The board gives each rank
//   - a state word in shared memory (POSIX shm, one page per rank, mapped by every rank on
//     its host): kAwake, kSleeping or kAwaitingSends, published by the rank's poller before
//     it sleeps (kAwaitingSends: a message of its waits behind a send that only completes
//     when the receiver's MPI has taken it, a rendezvous: wake it when you receive from it);
//   - a UNIX datagram socket in the abstract namespace (nothing left on disk), readable
//     when someone woke the rank: the poller's event loop waits on it with its timer;
//   - an eventfd, which each peer copies at attach() (pidfd_getfd: the rights
//     process_vm_readv needs too, which MPI's shared-memory transport uses): a peer that has
//     a copy wakes the rank by writing it, else by the datagram. A datagram on a UNIX socket
//     is a "synchronous" wake-up: Linux puts the woken rank on the waker's CPU, expecting the
//     waker to sleep, and a waker that goes on polling then holds it off (taskwire-bench dag,
//     docs/mpi-poll-policy.md); an eventfd write is an ordinary wake-up.
// A sender, after MPI_Isend to a peer on its host, calls wake(peer): a shared-memory load
// when the peer is awake, one eventfd write (or datagram) when it sleeps (the word flips to
// kAwake first, so one wake-up per sleep). Lost wake-ups are excluded as in a futex: the sleeper publishes
// kSleeping, then polls once more before it sleeps; the sender's MPI_Isend precedes its
// load of the word (both sequentially consistent).
// A receiver calls wake_if_awaiting_sends(sender) after each receive: a shared-memory load,
// and a wake-up only for a sender that sleeps in kAwaitingSends. That one is not free of lost
// wake-ups (the send may complete only after the receiver looked): such a sleep is timed.
// Peers on other hosts (no shared word to look at) are woken by a UDP datagram to the socket
// each rank binds on the address of its MPI network (open_network(), attach_network()). A
// sender cannot see whether such a peer sleeps, so the rule is a promise between the two: a
// rank with peers on other hosts sleeps until woken only after kRemoteSleepAfter without
// progress (before that its sleeps are timed), and a sender sends a datagram with a message
// to such a peer unless it sent it one less than half that long ago (that message was
// progress there, so the peer cannot be in such a sleep yet). Busy pairs send none; a rank
// woken by a datagram counts it as progress, so a message that trails its datagram (an MPI
// connection still being set up) is still found by the timed sleeps that follow.
// A rank whose kernel runs more of the job's ranks than it has cores (set_crowded(): emulated
// hosts, containers) sleeps until woken at once instead, as polling would take the core its
// peers need, and its senders send it a datagram with every message.
// Where shm or sockets are unavailable, peers are simply not woken: their pollers fall back
// to the timed sleep.
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace taskwire::comm::mpi {

class WakeBoard {
 public:
  static constexpr std::uint32_t kAwake = 0, kSleeping = 1, kAwaitingSends = 2;
  /// See above: a rank with peers on other hosts waits this long without progress before a
  /// sleep that only a wake-up ends; senders to it send a datagram after half of it.
  static constexpr std::chrono::microseconds kRemoteSleepAfter{200};
  /// While a request with a peer on another host stays in flight, rewake() sends it a
  /// datagram at most this often.
  static constexpr std::chrono::microseconds kRemoteRewakeEvery{1000};
  static long current_pid() noexcept;

  /// Creates this rank's word, socket and (unless told not to: tests of the datagram path)
  /// eventfd, named after `key` (the process id; tests use others). Call before the peers learn the key; never throws (a failure leaves the board
  /// without wake-ups).
  /// `nonce`: what the page says for attach() to check (random_nonce() when 0).
  explicit WakeBoard(long key = current_pid(), bool with_event_fd = true, std::uint64_t nonce = 0);
  static std::uint64_t random_nonce();
  /// The shm name of `key`'s page: "/taskwire-wake-KEY" (/dev/shm/taskwire-wake-KEY on Linux).
  static std::string shm_name_of(long key);
  ~WakeBoard();
  WakeBoard(const WakeBoard&) = delete;
  WakeBoard& operator=(const WakeBoard&) = delete;

  /// Maps the words of the other ranks, by key (0: not on this host). With `nonces` (per
  /// rank, from its nonce()), a page whose nonce differs is not the rank's (another /dev/shm,
  /// a reused pid): that rank is not reached.
  void attach(const std::vector<long>& keys, int own_rank, const std::vector<std::uint64_t>& nonces = {});
  /// Random; written on this rank's page for attach() to check.
  std::uint64_t nonce() const noexcept { return nonce_; }

  /// Binds this rank's UDP socket on `address` (any port): ranks on other hosts wake it
  /// there. Returns the port, 0 on failure.
  std::uint16_t open_network(in_addr address);
  /// Per rank, the UDP address of each rank on another host (port 0: a local rank, or one
  /// that has no socket). After attach().
  void attach_network(const std::vector<sockaddr_in>& peers);
  /// Readable after a datagram from another host (read it, or drain()); -1 when none.
  int network_fd() const noexcept { return net_fd_; }
  /// Whether `rank` is on another host and wake() reaches it by datagram.
  bool reaches_by_network(int rank) const noexcept {
    return net_fd_ >= 0 && rank >= 0 && static_cast<std::size_t>(rank) < net_peers_.size() &&
           net_peers_[static_cast<std::size_t>(rank)].sin_port != 0;
  }
  /// Whether some peer wakes this rank only by datagram (see kRemoteSleepAfter).
  bool has_remote_peers() const noexcept { return remote_peers_; }
  /// Per rank, whether its kernel runs more ranks of the job than it has cores
  /// (crowded_ranks()): such a peer on another host gets a datagram with every
  /// message, and this rank, if crowded, sleeps until woken without waiting
  /// kRemoteSleepAfter. After attach().
  void set_crowded(std::vector<bool> crowded);
  /// Whether this rank shares its cores with more ranks than it has (see set_crowded()).
  bool crowded() const noexcept { return own_crowded_; }
  /// Removes this process's shm name once every peer mapped it (the mapping stays).
  void unlink_own() noexcept;

  bool usable() const noexcept { return own_ != nullptr && fd_ >= 0; }
  /// Whether wake(rank) can reach `rank` (it is on this host and attached).
  bool reaches(int rank) const noexcept;
  /// Whether every other rank can wake this one (on this host, or by datagram from another):
  /// sleeps may be long.
  bool all_peers_reach_me() const noexcept { return all_attached_; }
  /// Ranks of this job on this host, this one included (1 before attach()).
  int local_ranks() const noexcept { return local_ranks_; }

  /// This rank's word (kSleeping or kAwaitingSends while its poller sleeps). Null when
  /// unusable.
  std::atomic<std::uint32_t>* own_word() const noexcept { return own_; }
  /// Readable after a wake-up by a datagram; drain() empties it. -1 when unusable.
  int fd() const noexcept { return fd_; }
  /// Readable after a wake-up by a peer that holds a copy of it (an eventfd: read 8 bytes to
  /// reset it, or drain()); -1 when there is none. Wait on both.
  int event_fd() const noexcept { return event_fd_; }
  /// Whether wake(rank) writes a copy of rank's eventfd (else it sends a datagram).
  bool wakes_by_event_fd(int rank) const noexcept {
    return reaches(rank) && peer_event_fds_[static_cast<std::size_t>(rank)] >= 0;
  }
  void drain() noexcept;

  /// Wakes `rank` if it sleeps, after a message was sent to it. Cheap when it is awake (on
  /// another host: when it was sent a message lately); safe from any thread.
  void wake(int rank) noexcept;
  /// As wake(), for a request with `rank` still in flight (no new message): a peer on
  /// another host gets a datagram at most every kRemoteRewakeEvery.
  void rewake(int rank) noexcept;
  /// Wakes `rank` only if it sleeps in kAwaitingSends (for a receiver that just took one of
  /// its messages). Cheap otherwise; safe from any thread.
  void wake_if_awaiting_sends(int rank) noexcept;

 private:
  std::atomic<std::uint32_t>* own_ = nullptr;
  std::string own_name_;
  int fd_ = -1;
  int event_fd_ = -1;
  std::vector<int> peer_event_fds_;  // per rank: a copy of its eventfd, -1 for none
  std::vector<std::atomic<std::uint32_t>*> words_;  // per rank, null if not reachable
  std::vector<long> keys_;
  void send_wake(int rank) noexcept;
  void send_datagram(int rank) noexcept;
  bool all_attached_ = false;
  int own_rank_ = 0;
  int local_ranks_ = 1;
  std::uint64_t nonce_ = 0;
  int net_fd_ = -1;
  std::vector<sockaddr_in> net_peers_;  // per rank: port 0 for none
  bool remote_peers_ = false;
  std::vector<bool> crowded_;  // per rank (set_crowded())
  bool own_crowded_ = false;
  // Per rank, steady-clock nanoseconds of the last message (wake) and datagram sent to it.
  std::unique_ptr<std::atomic<std::int64_t>[]> last_message_, last_datagram_;
};

}  // namespace taskwire::comm::mpi
