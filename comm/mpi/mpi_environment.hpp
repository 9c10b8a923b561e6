#pragma once
// comm::mpi::MpiEnvironment, taskwire::mpi::MpiEnvironment to programs: the one object that
// owns MPI in a process (initialisation, the runtime's private communicator, an orderly
// shutdown, finalisation).
//
// - Construction calls MPI_Init_thread (unless MPI is already initialised, in which case the
//   program keeps ownership and finalises MPI itself) and duplicates MPI_COMM_WORLD into
//   comm(), with MPI_ERRORS_RETURN, for all runtime traffic. Started without mpiexec this is a
//   1-rank world that works.
// - No rank ever sits in a blocking MPI call: MPICH 4.0 spins in them without yielding, and
//   4-6 ranks share 2 cores in tests. barrier() and shutdown() poll with a sleeping backoff.
// - Every MPI call the runtime makes holds mutex(); that is why MPI_THREAD_SERIALIZED is
//   enough for taskwire. Ask for `multiple` if the program makes its own MPI calls from other
//   threads while taskwire runs.
// - shutdown() (also run by the destructor, and at exit() if the program forgot): the comm
//   layer's hooks drain their traffic, then GOODBYE goes to every other rank, every rank's
//   GOODBYE is awaited (anything else still arriving is discarded), a polled MPI_Ibarrier,
//   MPI_Comm_free, MPI_Finalize. A GOODBYE carries the rank's reason (mpi_exits.hpp): an
//   orderly shutdown, exit(status) with MPI still up (the exit handler), or a signal; the
//   other ranks read it with farewell_of(), and whoever runs the job decides what it means.
//
// At most one MpiEnvironment exists per process, and only one can ever be created (MPI
// cannot be initialised again after MPI_Finalize). Thread-safety: all members are safe to
// call from any thread.
#include <taskwire/runtime/config.hpp>
#include <taskwire/comm/mpi/mpi_exits.hpp>
#include <taskwire/comm/mpi/mpi_hosts.hpp>
#include <taskwire/comm/mpi/mpi_wake.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskwire::comm::mpi {

enum class MpiThreadLevel { serialized, multiple };

/// Idle backoff after mpi4py.futures' Backoff: reset() on any progress; while idle,
/// kQuickPolls quick polls, then waits doubling from 1 us up to `sleep_cap`.
class MpiBackoff {
 public:
  /// mpi4py.futures' count (docs/mpi-poll-policy.md, rule 6).
  static constexpr unsigned kQuickPolls = 64;
  explicit MpiBackoff(const runtime::MpiPollConfig& config) : config_(config) {}
  void reset() noexcept { idle_ = 0; }
  /// Records an idle poll and returns how long to wait before the next one (0: poll again
  /// at once).
  std::chrono::microseconds next() noexcept;
  /// next(), then sleeps that long (or yields the core when it is 0).
  void sleep();

 private:
  runtime::MpiPollConfig config_;
  unsigned idle_ = 0;
};

struct MpiEnvironmentOptions {
  /// The level requested from MPI_Init_thread; construction fails if MPI provides less.
  MpiThreadLevel thread_level = MpiThreadLevel::serialized;
  /// How long shutdown() waits for every other rank's GOODBYE (and its own drain) before it
  /// gives up and ends the job with MPI_Abort, naming the missing ranks. 0: wait as long as
  /// it takes (a rank that dies makes the launcher end the job anyway).
  std::chrono::milliseconds shutdown_timeout{0};
  /// Backoff of the polled barrier and shutdown loops (default: Config::from_env().mpi).
  runtime::MpiPollConfig poll = runtime::Config::from_env().mpi;
};

class MpiEnvironment {
 public:
  using Clock = std::chrono::steady_clock;
  /// Runs during shutdown(), before GOODBYE: drains the hook owner's traffic, then makes no
  /// further MPI call. `deadline` is Clock::time_point::max() when there is none.
  using ShutdownHook = std::function<void(Clock::time_point deadline)>;

  /// Tag reserved on comm() for the environment's own messages (GOODBYE); the comm layer
  /// uses tags 1..tag_ub().
  static constexpr int kControlTag = 0;

  /// Throws std::runtime_error when MPI cannot be initialised at the requested level, or
  /// std::logic_error when an environment exists or existed in this process.
  explicit MpiEnvironment(MpiEnvironmentOptions options = {});
  MpiEnvironment(int& argc, char**& argv, MpiEnvironmentOptions options = {});
  ~MpiEnvironment();  ///< shutdown(); never throws
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  /// The live environment of this process, or null (none yet, or destroyed).
  static MpiEnvironment* current() noexcept;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  int tag_ub() const noexcept { return tag_ub_; }
  /// The runtime's private duplicate of MPI_COMM_WORLD (MPI_ERRORS_RETURN).
  MPI_Comm comm() const noexcept { return comm_; }
  /// Held around every MPI call the runtime makes. Shared so that holders (the comm layer's
  /// poller) may outlive the environment without dangling.
  const std::shared_ptr<std::mutex>& mutex() const noexcept { return mutex_; }

  /// Synchronous: a polled MPI_Ibarrier on comm() over all ranks, sleeping between polls.
  /// Throws std::runtime_error after shutdown() or on an MPI error.
  void barrier();

  /// Waits for `request`, whose start returned `started` (an MPI error code), by MPI_Test
  /// under mutex() with the poll backoff between tests: no rank sits in a blocking MPI call
  /// while it waits (they spin in MPICH 4.0). False when `deadline` passed first (the request
  /// still pending). Throws std::runtime_error "`what` failed: ..." on an MPI error.
  bool wait_polled(MPI_Request& request, int started, const char* what,
                   Clock::time_point deadline = Clock::time_point::max());

  /// Orderly, drained shutdown then MPI_Finalize (see above). Idempotent; must not be called
  /// from a thread that a hook needs to make progress (hooks poll MPI themselves). `why`
  /// goes with this rank's GOODBYE.
  void shutdown() noexcept { shutdown(Farewell{}); }
  void shutdown(Farewell why) noexcept;
  bool is_shut_down() const noexcept;

  /// The MPI backend registers its drain here (the environment knows nothing of it). Hooks run in
  /// reverse order of registration, on the thread calling shutdown().
  int add_shutdown_hook(ShutdownHook hook);
  void remove_shutdown_hook(int id) noexcept;

  /// Called by whoever received a GOODBYE from `rank` on kControlTag.
  void note_goodbye(int rank) noexcept;
  /// Receives a GOODBYE that MPI_Improbe matched on kControlTag (under mutex(); it is a few
  /// bytes, already here), and notes it and its reason.
  void take_goodbye(MPI_Message& msg, const MPI_Status& status);
  /// Takes every GOODBYE that has arrived (take_goodbye()), for a rank whose comm layer does
  /// not poll MPI (a cluster over TCP). Cheap; nothing after shutdown().
  void take_goodbyes();
  /// The reason `rank` gave with its GOODBYE; none before it came.
  std::optional<Farewell> farewell_of(int rank) const noexcept;
  /// Whether `rank` said GOODBYE: it is shutting down, comms to it are over.
  bool said_goodbye(int rank) const noexcept;

  /// Peer death. Plain MPI cannot survive a rank that dies: launchers usually end the whole
  /// job, but some do not (mpiexec -disable-auto-cleanup, some batch systems), and then
  /// MPI_Finalize would hang. So ranks on the same host watch each other's process ids
  /// (exchanged at start), and across hosts each rank watches the next one by a TCP
  /// connection that ends with its process (mpi_hosts.hpp): check_peers() returns the ranks
  /// newly found dead without a GOODBYE (at most one check per 200 ms unless `now_please`;
  /// cheap to call every poll). shutdown() with a lost peer ends the job with MPI_Abort and
  /// a message naming the rank.
  std::vector<int> check_peers(bool now_please = false);
  /// Blocks until a watched peer may have ended, or `timeout` (then check_peers(true)).
  void wait_for_peer_event(std::chrono::milliseconds timeout);
  bool is_lost(int rank) const noexcept;
  /// How a lost rank ended, as far as this rank can see: "pid 42 was killed by SIGKILL
  /// (Killed)" or "pid 42 exited with status 0" for a rank on this host (its zombie's wait
  /// status), "its link to this host closed" for a rank on another host.
  std::string how_lost(int rank) const;
  /// While held, the launcher does not end the job the instant a rank on this host dies
  /// (mpi_exits.hpp, LauncherLinks): the caller must watch check_peers() and end the job
  /// itself (MPI_Abort) when one did. Returns how many ranks' links are held.
  int hold_launcher_links(bool hold);
  /// A rank on this host whose process ended may have a watcher (rank_watcher.hpp) that
  /// names it and then ends the same way: waits up to `timeout` for that watcher to end, so
  /// that its line is out before this rank ends the job. Returns whether the watcher ended
  /// (false at once when the rank has none).
  bool wait_for_watcher(int rank, std::chrono::milliseconds timeout) const;
  /// How long a rank that found another dead waits for that rank's watcher (it writes its
  /// line and ends within milliseconds of the death; the bound is for a watcher someone
  /// stopped).
  static constexpr std::chrono::milliseconds kWatcherLine{2000};
  /// The host name `rank` reported at start-up ("?" if none), for messages.
  std::string host_of(int rank) const;

  /// Cross-process wake-ups for the comm layer's poller (see mpi_wake.hpp). Shared so that
  /// the poller may outlive the environment.
  const std::shared_ptr<WakeBoard>& wake_board() const noexcept { return wake_board_; }

  /// The text of an MPI error code, for logs.
  static std::string error_string(int code);

 private:
  void init(int* argc, char*** argv);
  /// Collective: every rank's HostIdentity; sets hosts_, peer_pids_, peer_fds_,
  /// watcher_fds_, launcher_fds_, host_keys_, several_hosts_.
  std::vector<HostIdentity> exchange_identities(std::uint64_t wake_nonce);
  void attach_wake_board(const std::vector<HostIdentity>& all);  ///< collective across hosts
  int mpi_node();
  void connect_hosts(const std::vector<long>& keys);
  template <class Record>
  std::vector<Record> allgather(const Record& mine);
  std::vector<int> lost_without_goodbye() const;
  bool peer_process_ended(int rank) const;
  void drain_and_goodbye(Clock::time_point deadline, Farewell why);
  /// Receives in full every message that has arrived and drops it (under mutex_).
  using Discards = std::vector<std::pair<MPI_Request, std::unique_ptr<char[]>>>;
  bool take_and_discard(Discards& discards);
  std::vector<MPI_Request> send_goodbyes(Farewell why);  ///< under mutex_
  void shutdown_barrier(Clock::time_point deadline);
  /// The dead-peer check of shutdown: a rank lost without GOODBYE (check_peers()) ends the
  /// job, as MPI cannot finalise with it.
  void abort_if_peers_lost();
  void abort_job(const std::string& why) noexcept;
  void finalize();

  MpiEnvironmentOptions options_;
  std::shared_ptr<std::mutex> mutex_ = std::make_shared<std::mutex>();
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, tag_ub_ = 32767;
  bool owns_mpi_ = false;
  std::atomic<bool> shut_down_{false};
  std::mutex shutdown_mu_;  // one shutdown at a time
  std::unique_ptr<std::atomic<bool>[]> goodbye_from_;  // per rank
  std::unique_ptr<std::atomic<bool>[]> lost_;          // per rank
  // Per rank: its GOODBYE's Farewell, encoded (farewell_code()); 0 before it came.
  std::unique_ptr<std::atomic<std::int64_t>[]> farewell_;
  std::unique_ptr<std::atomic<int>[]> lost_status_;   // per rank: wait status, -1 unknown
  std::int32_t goodbye_payload_[2] = {};  // this rank's Farewell, sent with its GOODBYEs
  std::vector<int> launcher_fds_;   // per rank on this host: its PMI socket's number, or -1
  std::mutex links_mu_;
  LauncherLinks links_;
  std::vector<long> peer_pids_;  // pid per rank on this host, 0 on other hosts
  std::vector<int> peer_fds_;    // pidfd per rank on this host, -1 if none
  std::vector<int> watcher_fds_;  // pidfd of each such rank's watcher, -1 if none
  std::vector<std::string> hosts_;  // host name per rank
  std::vector<long> host_keys_;     // per rank: its pid if on this host (its wake-board key), else 0
  PeerWatch watch_;                 // of watched_rank_, on another host
  int watched_rank_ = -1;
  bool several_hosts_ = false;
  std::shared_ptr<WakeBoard> wake_board_;
  std::mutex check_mu_;
  Clock::time_point next_check_{};
  std::mutex hooks_mu_;
  std::vector<std::pair<int, ShutdownHook>> hooks_;
  int next_hook_id_ = 0;
};

}  // namespace taskwire::comm::mpi

// What programs name: the MPI launch API's namespace (launch/mpi/launch.hpp).
namespace taskwire::mpi {
using comm::mpi::Farewell;
using comm::mpi::MpiEnvironment;
using comm::mpi::MpiEnvironmentOptions;
using comm::mpi::MpiThreadLevel;
}  // namespace taskwire::mpi
