#pragma once
// MpiPoller: the one object per rank (process) that makes the comm layer's MPI calls, however
// many Contexts, Registries and MpiBackends the process has. MPI has no file descriptor to
// wake an event loop, so the poller polls; each turn it
//   1. completes finished requests (MPI_Testsome) and starts what they unblock,
//   2. drains incoming messages with matched probes on any source and tag (MPI_Improbe +
//      MPI_Imrecv: no probe/receive race) and routes each by (source, tag) to its connection,
// and sends are started at once by the writing thread (MPI_Isend, or MPI_Isend_c for chunks
// above INT_MAX). Completions go to each comm's strand with asio::post; no handler runs under
// the poller's lock. State and MPI calls are serialised by runtime::MpiEnvironment::mutex().
//
// Where the poller runs (decided by measurement): as a PollDriver handler on each
// MpiBackend's io_context that re-posts itself while busy and sleeps on a steady_timer when
// idle; a local write wakes it at once. The alternative, a thread of its own handing
// completions to Asio, costs a cross-thread wake-up per message.
// Measured with tests/comm/mpi/mpi_pingpong.cpp (`mpiexec.mpich -n 2 mpi_pingpong`, round
// trips in us, median of 5 batches; MPICH 4.0.2 ch4:ucx, no UCX settings needed) on this
// 2-core VM, BUT with the load average at 9-11 from other builds, so absolute figures are
// 5-10x what a quiet machine gives (raw MPI 8 B was 1.3 us quiet, 7-11 us here):
//                  8 B    1 KiB   64 KiB    1 MiB   16 MiB
//   raw MPI       11.0     13.6    221     3040    19606
//   (a) io_ctx    94.0    217     1316     1681     8585   idle 3.0 % of a core
//   (b) thread   745      541      274      623    17216   idle 2.1-2.3 %
//   TCP backend  126      167      410     2631    52310
// (a) after keeping the poller spinning while a rendezvous is in flight (kBusySpin):
//   raw 7.1 / 14.0 / 158 / 2166 / 27832; mpi 91 / 84 / 225 / 1574 / 30696;
//   tcp 98 / 99 / 175 / 1185 / 48530; idle 3.5-4.1 %.
// So (a): (b) pays a cross-thread wake-up per message, 8x worse at 8 B when cores are
// oversubscribed. None of the latency/idle targets could be checked on a quiet machine in
// this session; re-measure with the same tool (TASKWIRE_MPI_POLL_THREAD=1 selects (b)).
//
// Idle backoff after mpi4py.futures' Backoff (runtime::MpiBackoff): reset on any progress or
// local send; config.mpi.spin_polls quick polls, then sleeps doubling from 1 us to
// config.mpi.sleep_cap. While requests are in flight (a rendezvous transfer needs MPI
// progress to move) the sleep is capped at kBusySleepCap.
#include <taskwire/comm/mpi/mpi_connection.hpp>
#include <taskwire/comm/mpi/mpi_wire.hpp>
#include <taskwire/runtime/config.hpp>
#include <taskwire/runtime/mpi_environment.hpp>

#include <atomic>
#include <functional>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

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
  bool busy = false;      ///< requests are in flight
  bool finished = false;  ///< shut down: the driver can stop
};

class MpiPoller : public std::enable_shared_from_this<MpiPoller> {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kBusySleepCap{50};
  static constexpr std::chrono::microseconds kBusySpin{2000};

  /// The process's poller, created on first use; null when no MpiEnvironment is alive.
  static std::shared_ptr<MpiPoller> instance();
  /// The sentence a caller reports when instance() is null.
  static const char* no_environment_text() noexcept;

  explicit MpiPoller(runtime::MpiEnvironment& env);
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

  /// One poll turn (for PollDriver).
  TurnResult turn();
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
  };
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
  /// Posts `f` to the connection's strand, or buries it if its owner is gone.
  void post(const ConnectionPtr& c, std::function<void()> f);

  bool turn_locked();
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
  bool post_send(const ConnectionPtr& c, OutMessage& m, const char* data, std::uint64_t n);
  void fail_queued_writes(const ConnectionPtr& c, error_code ec, bool include_in_flight);

  // lifecycle of a connection
  void end_comm(const ConnectionPtr& c, error_code ec);
  void fail(const ConnectionPtr& c, errc code, const std::string& why);
  void fail_connect(const ConnectionPtr& c, error_code ec);
  void maybe_retire(const ConnectionPtr& c);
  bool track(MPI_Request req, Pending p);

  runtime::MpiEnvironment* env_;
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
  runtime::Limits default_limits_;
};

/// Drives the poller from one io_context (one per MpiBackend): re-posts itself while busy,
/// sleeps on a timer when idle, woken at once by a local write. Its state is confined to its
/// strand; wake() is safe from any thread.
/// With TASKWIRE_MPI_POLL_THREAD=1 it runs on a thread of its own instead (sleeping on a
/// condition variable): the measured alternative, kept so the figures can be re-measured.
class PollDriver : public std::enable_shared_from_this<PollDriver> {
 public:
  PollDriver(std::shared_ptr<MpiPoller> poller, asio::any_io_executor executor,
             runtime::MpiPollConfig config, bool own_thread = false);
  ~PollDriver();
  void start();
  void stop() noexcept;  ///< detaches; pending handlers then return without polling
  void wake() noexcept;

 private:
  void run();
  void thread_loop();
  std::chrono::microseconds next_wait(const TurnResult& r);

  std::shared_ptr<MpiPoller> poller_;
  asio::strand<asio::any_io_executor> strand_;
  asio::steady_timer timer_;
  runtime::MpiBackoff backoff_;
  MpiPoller::Clock::time_point last_progress_{};
  std::atomic<bool> stopped_{false}, sleeping_{false}, kicked_{false};
  bool own_thread_;
  std::thread thread_;
  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
};

}  // namespace taskwire::comm::mpi
