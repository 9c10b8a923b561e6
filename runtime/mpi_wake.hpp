#pragma once
// runtime::WakeBoard: lets a rank wake another rank on the same host whose MPI poller sleeps.
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
// Peers on other hosts, or where shm or sockets are unavailable, are simply not woken: their
// pollers fall back to the timed sleep.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace taskwire::runtime {

class WakeBoard {
 public:
  static constexpr std::uint32_t kAwake = 0, kSleeping = 1, kAwaitingSends = 2;
  static long current_pid() noexcept;

  /// Creates this rank's word, socket and (unless told not to: tests of the datagram path)
  /// eventfd, named after `key` (the process id; tests use others). Call before the peers learn the key; never throws (a failure leaves the board
  /// without wake-ups).
  explicit WakeBoard(long key = current_pid(), bool with_event_fd = true);
  ~WakeBoard();
  WakeBoard(const WakeBoard&) = delete;
  WakeBoard& operator=(const WakeBoard&) = delete;

  /// Maps the words of the other ranks, by key (0: not on this host).
  void attach(const std::vector<long>& keys, int own_rank);
  /// Removes this process's shm name once every peer mapped it (the mapping stays).
  void unlink_own() noexcept;

  bool usable() const noexcept { return own_ != nullptr && fd_ >= 0; }
  /// Whether wake(rank) can reach `rank` (it is on this host and attached).
  bool reaches(int rank) const noexcept;
  /// Whether every other rank can wake this one (all on this host): sleeps may be long.
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

  /// Wakes `rank` if it sleeps. Cheap when it is awake; safe from any thread.
  void wake(int rank) noexcept;
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
  bool all_attached_ = false;
  int local_ranks_ = 1;
};

}  // namespace taskwire::runtime
