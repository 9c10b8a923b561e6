#pragma once
// MpiPoller: the one object per rank (process) that makes the comm layer's MPI calls, however
// many Contexts, Registries and MpiBackends the process has. MPI has no file descriptor to
// wake an event loop, so the poller polls; each turn it
//   1. completes finished requests (MPI_Testsome) and starts what they unblock,
//   2. drains incoming messages with matched probes on any source and tag (MPI_Improbe +
//      MPI_Imrecv: no probe/receive race) and routes each by (source, tag) to its connection,
// and sends are started at once by the writing thread (MPI_Isend, or MPI_Isend_c for chunks
// above INT_MAX; now and then a synchronous one, see needs_confirmation). Completions are queued per connection (Connection::outbox, run in order on
// the comm's strand); no handler runs under the poller's lock. State and MPI calls are
// serialised by MpiEnvironment::mutex().
//
// Where the poller runs: as a PollDriver handler on each MpiBackend's io_context that polls
// in bursts (kBurst) and sleeps on a timer, or on the wake board's eventfd and socket, when
// idle; a local write wakes it at once. When it polls, yields or sleeps is PollPolicy (mpi_poll_policy.hpp).
// Wake-ups (WakeBoard): a rank wakes a sleeping peer on its host after it sends to
// it, and again after each turn while a send to it is in flight (a send MPI held back leaves
// in a later call); a receiver wakes a sender that sleeps awaiting its sends. The measurements
// behind these choices are in docs/mpi-poll-policy.md.
#include <taskwire/comm/mpi/mpi_connection.hpp>
#include <taskwire/comm/mpi/mpi_poll_policy.hpp>
#include <taskwire/comm/mpi/mpi_wire.hpp>
#include <taskwire/runtime/config.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>
#include <taskwire/comm/mpi/mpi_wake.hpp>

#include <atomic>
#include <functional>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace taskwire::runtime {
class UrgentWork;
}

namespace taskwire::comm::mpi {

class PollDriver;

/// A started listener, as the poller sees it.
struct ListenerEntry {
  std::shared_ptr<bool> owner;  ///< see Connection::owner
  asio::any_io_executor executor;
  RawAcceptHandler on_comm;
  runtime::Limits limits;
  std::uint64_t max_chunk_bytes = 1u << 30;
  std::string address;
};

struct TurnResult {
  bool progress = false;  ///< something completed or arrived
  bool receiving = false;      ///< receives are in flight
  bool sending = false;        ///< sends are in flight
  bool sending_remote = false;  ///< some to a rank on another host
  bool sends_blocked = false;  ///< a message waits behind a send in flight
  bool finished = false;  ///< shut down: the driver can stop
  bool deferred = false;  ///< a completion could not run inline: let the io_context run
};

class MpiPoller : public std::enable_shared_from_this<MpiPoller> {
 public:
  using Clock = std::chrono::steady_clock;
  /// Longest run of back-to-back polls inside one handler of the driver.
  static constexpr std::chrono::microseconds kBurst{20};

  /// The process's poller, created on first use; null when no MpiEnvironment is alive.
  static std::shared_ptr<MpiPoller> instance();
  /// The sentence a caller reports when instance() is null.
  static const char* no_environment_text() noexcept;

  explicit MpiPoller(MpiEnvironment& env);
  MpiPoller(const MpiPoller&) = delete;
  MpiPoller& operator=(const MpiPoller&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  /// Synchronous. Throws CommError(io) when the port is taken or the poller shut down.
  void add_listener(std::uint32_t port, std::shared_ptr<ListenerEntry> entry);
  void remove_listener(std::uint32_t port, const ListenerEntry* entry) noexcept;

  /// Asynchronous: HELLO to `to`; the handler runs on `executor` with the comm on ACCEPT,
  /// errc::refused on REFUSED, errc::closed if the rank said GOODBYE or this poller shut down.
  void connect(const MpiLocation& to, asio::any_io_executor executor,
               const runtime::Config& config, std::shared_ptr<bool> owner,
               RawConnectHandler handler);

  /// The backend owning `owner` goes away (its Context may follow): its connections are
  /// aborted and its listeners removed, and nothing is posted to its executors any more.
  void detach_owner(const std::shared_ptr<bool>& owner) noexcept;

  /// For MpiComm. submit() starts sending at once when the connection is idle.
  void submit(const ConnectionPtr& c, Message message, WriteHandler handler,
              std::shared_ptr<Comm> keep);
  void close(const ConnectionPtr& c);
  void abort(const ConnectionPtr& c) noexcept;
  /// The comm's reader caught up with a connection that was holding messages back.
  void resume(const ConnectionPtr& c);

  /// One poll turn (for PollDriver). Completions for comms whose strand runs on `here` (the
  /// io_context of the calling driver, which runs in this thread) are dispatched after the
  /// lock is released, so they run inline when their strand is free; so are completions
  /// of what those handlers start (a write's). The rest are posted.
  TurnResult turn(const asio::execution_context* here = nullptr);
  /// Whether a message is waiting that no turn has taken yet (MPI_Iprobe). For the last look
  /// before a sleep: MPICH's MPI_Improbe looks, then progresses when it found nothing, so the
  /// turn that ends with it can leave a message that arrived during that progress.
  bool message_waiting();
  /// Cross-process wake-ups (never null; possibly unusable).
  const std::shared_ptr<WakeBoard>& board() const noexcept { return board_; }
  void attach(PollDriver* driver);
  void detach(PollDriver* driver) noexcept;

  /// The MpiEnvironment's shutdown hook: refuses new work, closes every connection
  /// gracefully (queued writes are flushed first), polls until all requests completed or
  /// `deadline`, then never calls MPI again.
  void drain(Clock::time_point deadline);

 private:
  struct Pending {
    enum Kind : unsigned char { send, recv_head, recv_chunk, discard };
    ConnectionPtr conn;  // null for discards of unroutable messages
    InMessage* in = nullptr;
    Kind kind = discard;
    std::shared_ptr<char[]> scratch;  // where a discarded message lands
    unsigned turns = 0;               // turns that found it in flight
    Clock::time_point next_wake{};    // see note_requests
  };
  /// How often a peer is woken again for the same request in flight (see note_requests).
  static constexpr std::chrono::microseconds kRewakeEvery{1000};
  using Lock = std::unique_lock<std::mutex>;
  /// Holds the mutex; on release, destroys what was buried meanwhile only after unlocking
  /// (a handler may hold the last reference to a comm, whose destructor locks again).
  class Locked {
   public:
    explicit Locked(MpiPoller& p) : p_(p), lock_(*p.mutex_) {}
    ~Locked() {
      std::vector<std::function<void()>> buried;
      buried.swap(p_.graveyard_);
      lock_.unlock();
    }

   private:
    MpiPoller& p_;
    Lock lock_;
  };
  /// A completion found during a driver's turn, dispatched once the lock is released.
  struct Delivery {
    asio::strand<asio::any_io_executor> strand;
    std::function<void()> f;
  };
  /// Queues `f` for the connection's strand (see run_outbox), or buries it if its owner is
  /// gone.
  void post(const ConnectionPtr& c, std::function<void()> f);
  /// On the connection's strand: runs what post() queued, in order.
  void run_outbox(const ConnectionPtr& c);

  bool turn_locked();
  void note_requests(TurnResult& r);
  /// A receive from `peer` completed: if it sleeps waiting for its sends, one of them may be
  /// done now (a rendezvous completes at the sender once the receiver has the data).
  void taken_from(int peer) noexcept {
    if (board_) board_->wake_if_awaiting_sends(peer);
  }
  bool complete_requests();
  bool receive_incoming();
  void on_completed(Pending& p, const MPI_Status& status);
  void wake_drivers() noexcept;

  // receiving
  ConnectionPtr route(int source, int tag);
  void on_matched(const ConnectionPtr& c, MPI_Message msg, MPI_Count count);
  bool can_receive(const ConnectionPtr& c);
  bool try_receive(const ConnectionPtr& c, MPI_Message& msg, MPI_Count count);
  void receive_head(const ConnectionPtr& c, MPI_Message& msg, MPI_Count count);
  void receive_chunk(const ConnectionPtr& c, InMessage& in, MPI_Message& msg, MPI_Count count);
  /// Receives a message nobody wants into a scratch buffer. (A short receive would
  /// truncate, and MPICH reports errors of MPI_Testsome on MPI_COMM_WORLD, whose handler
  /// is fatal: so every receive here is full-size.)
  void discard_message(MPI_Message& msg, MPI_Count count, ConnectionPtr owner);
  int start_receive(void* buf, MPI_Count count, MPI_Message& msg, MPI_Request& req);
  void on_head(const ConnectionPtr& c, InMessage& in);
  void drain_matched(const ConnectionPtr& c);
  void deliver_ready(const ConnectionPtr& c);
  void on_hello(const ConnectionPtr& c, std::uint32_t port);
  void on_peer_close(const ConnectionPtr& c);
  void on_peer_gone(int rank, errc why);  ///< GOODBYE (closed) or death (peer_lost)

  // sending
  void enqueue_control(const ConnectionPtr& c, Kind kind, std::uint32_t arg = 0);
  void queue_close(const ConnectionPtr& c);
  void pump_sends(const ConnectionPtr& c);
  bool post_send(const ConnectionPtr& c, OutMessage& m, const char* data, std::uint64_t n,
                 bool synchronous = false);
  static bool needs_confirmation(Connection& c, const OutMessage& m) noexcept;
  void fail_queued_writes(const ConnectionPtr& c, error_code ec, bool include_in_flight);

  // lifecycle of a connection
  void end_comm(const ConnectionPtr& c, error_code ec);
  void fail(const ConnectionPtr& c, errc code, const std::string& why);
  void fail_connect(const ConnectionPtr& c, error_code ec);
  void maybe_retire(const ConnectionPtr& c);
  bool track(MPI_Request req, Pending p);

  MpiEnvironment* env_;
  std::shared_ptr<WakeBoard> board_;  ///< wakes sleeping peers on this host
  std::shared_ptr<std::mutex> mutex_;
  MPI_Comm comm_;
  int rank_, size_;
  std::uint32_t max_id_;
  bool finished_ = false;  ///< draining: no new work accepted
  bool draining_ = false;  ///< holding nothing back any more
  bool drained_ = false;   ///< no MPI call any more

  std::map<std::uint32_t, std::shared_ptr<ListenerEntry>> listeners_;
  std::unordered_map<std::uint64_t, ConnectionPtr> routes_;  // (source << 32 | tag)
  std::set<std::uint32_t> ids_in_use_;
  std::uint32_t next_id_ = 0;
  std::vector<MPI_Request> requests_;
  std::vector<Pending> pending_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  std::vector<PollDriver*> drivers_;
  std::vector<std::function<void()>> graveyard_;
  /// The running driver turn's deliveries, on its thread (see turn()).
  static thread_local std::vector<Delivery>* t_deliveries_;
  static thread_local const asio::execution_context* t_context_;
  static thread_local std::uint64_t t_outbox_runs_;  ///< run_outbox() calls on this thread
  runtime::Limits default_limits_;
};

/// Drives the poller from one io_context (one per MpiBackend): re-posts itself while busy,
/// sleeps on a timer when idle, woken at once by a local write. Its state is confined to its
/// strand; wake() is safe from any thread. The policy (when to poll, yield or sleep, and
/// how long) is next_wait(); docs/mpi-poll-policy.md has the measurements behind it.
class PollDriver : public std::enable_shared_from_this<PollDriver> {
 public:
  PollDriver(std::shared_ptr<MpiPoller> poller, asio::any_io_executor executor,
             runtime::MpiPollConfig config);
  ~PollDriver();
  void start();
  void stop() noexcept;  ///< detaches; pending handlers then return without polling
  void wake() noexcept;

 private:
  void run();
  void run_turns();
  void sleep(std::chrono::microseconds wait);
  /// Ends sleep `id` if it is the current one; `by` is the counter it adds to
  /// (mpi_poll_stats.hpp).
  void woken(std::uint64_t id, std::atomic<std::uint64_t>& by);
  void stay_awake();
  void read_wake_socket();
  void arm_wake_read(asio::posix::stream_descriptor* fd, asio::mutable_buffer into, bool& pending,
                     bool counts_as_progress = false);
  void guard();
  std::chrono::microseconds next_wait(const TurnResult& r);
  bool core_free() const;

  std::shared_ptr<MpiPoller> poller_;
  asio::strand<asio::any_io_executor> strand_;
  asio::steady_timer timer_;
  asio::steady_timer guard_timer_;  ///< bounds untimed sleeps (see guard())
  std::shared_ptr<WakeBoard> board_;
  std::unique_ptr<asio::posix::stream_descriptor> wake_fd_;  ///< board's socket, when usable
  std::unique_ptr<asio::posix::stream_descriptor> wake_event_fd_;  ///< board's eventfd, if any
  std::unique_ptr<asio::posix::stream_descriptor> wake_net_fd_;  ///< board's UDP socket, if any
  char wake_buf_[16];
  char wake_net_buf_[16];
  std::uint64_t wake_count_ = 0;
  bool reading_ = false;   ///< a read of wake_fd_ is pending
  bool reading_event_ = false;  ///< a read of wake_event_fd_ is pending
  bool reading_net_ = false;    ///< a read of wake_net_fd_ is pending
  bool untimed_ = false;   ///< the coming sleep waits for a wake-up, not for the timer
  bool in_sleep_ = false;  ///< a sleep is set up and not yet ended (strand-confined)
  std::uint64_t sleep_id_ = 0;  ///< the current sleep; stale wake-ups carry an older one
  const asio::execution_context* context_;  ///< the io_context the driver runs on
  const runtime::UrgentWork* urgent_;       ///< work posted for it that a burst would delay
  MpiBackoff backoff_;
  PollPolicy policy_;
  bool yield_unchecked_;
  bool wakeable_ = false;  ///< every peer can wake this rank (and it waits on the board)
  bool remote_peers_ = false;  ///< some peers wake it by datagram, from another host
  bool yield_next_ = false;  ///< give up the core before the next turn (see next_wait)
  int cores_;
  MpiPoller::Clock::time_point last_progress_{};
  std::atomic<bool> stopped_{false}, sleeping_{false}, kicked_{false};
  std::uint32_t sleep_word_ = WakeBoard::kSleeping;  ///< what the coming sleep publishes
};

}  // namespace taskwire::comm::mpi
