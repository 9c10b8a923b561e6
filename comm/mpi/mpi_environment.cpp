#include <taskwire/comm/mpi/mpi_environment.hpp>
#include <taskwire/comm/mpi/mpi_hosts.hpp>
#include <taskwire/comm/mpi/rank_watcher.hpp>
#include <taskwire/comm/mpi/ucx_defaults.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdexcept>
#include <thread>

namespace taskwire::comm::mpi {
namespace {

std::mutex g_current_mu;  // guards g_current and g_ever
MpiEnvironment* g_current = nullptr;
bool g_ever = false;

// exit() without destroying the environment (a local in main, a worker calling exit())
// would leave MPI unfinalised, which hydra turns into killing the whole job. Shut down in
// order instead, telling the other ranks the exit status (on_exit, not atexit: it has it),
// so that whoever runs the job can end it rather than wait for this rank.
void shutdown_at_exit(int status, void*) {
  MpiEnvironment* env;
  {
    std::lock_guard lock(g_current_mu);
    env = g_current;
  }
  if (env && !env->is_shut_down()) {
    spdlog::warn("rank {}: exit({}) with MPI still up: telling the other ranks, shutting MPI "
                 "down in order",
                 env->rank(), status);
    env->shutdown(Farewell::exited(status));
  }
}

// A GOODBYE's Farewell in one word: 0 until it came.
std::int64_t farewell_code(Farewell f) noexcept {
  return (std::int64_t{static_cast<std::int32_t>(f.kind) + 1} << 32) |
         static_cast<std::uint32_t>(f.code);
}

const char* level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "an unknown thread level";
}

}  // namespace

std::chrono::microseconds MpiBackoff::next() noexcept {
  const unsigned spin = kQuickPolls;
  if (idle_ < spin) {
    ++idle_;
    return std::chrono::microseconds(0);
  }
  const unsigned doublings = std::min(idle_ - spin, 30u);
  if (doublings < 30) ++idle_;
  const auto wait = std::chrono::microseconds(std::int64_t{1} << doublings);
  return std::min(wait, std::max(config_.sleep_cap, std::chrono::microseconds(1)));
}

void MpiBackoff::sleep() {
  const auto wait = next();
  if (wait.count() == 0) std::this_thread::yield();
  else std::this_thread::sleep_for(wait);
}

MpiEnvironment::MpiEnvironment(MpiEnvironmentOptions options) : options_(std::move(options)) {
  init(nullptr, nullptr);
}

MpiEnvironment::MpiEnvironment(int& argc, char**& argv, MpiEnvironmentOptions options)
    : options_(std::move(options)) {
  init(&argc, &argv);
}

void MpiEnvironment::init(int* argc, char*** argv) {
  {
    std::lock_guard lock(g_current_mu);
    if (g_ever)
      throw std::logic_error(
          "an MpiEnvironment already exists or existed in this process; create exactly one "
          "(MPI cannot be initialised again after MPI_Finalize)");
    g_ever = true;
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw std::runtime_error("MPI was already finalised in this process");
  const int required = options_.thread_level == MpiThreadLevel::multiple ? MPI_THREAD_MULTIPLE
                                                                          : MPI_THREAD_SERIALIZED;
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    apply_ucx_defaults();
    const int rc = MPI_Init_thread(argc, argv, required, &provided);
    if (rc != MPI_SUCCESS)
      throw std::runtime_error("MPI_Init_thread failed: " + error_string(rc));
    owns_mpi_ = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < required) {
    if (owns_mpi_) MPI_Finalize();
    throw std::runtime_error(fmt::format(
        "MPI provides {} but taskwire needs {}{}", level_name(provided), level_name(required),
        initialized ? " (MPI was initialised by the program: call MPI_Init_thread with that "
                      "level, or let MpiEnvironment initialise MPI)"
                    : " (is this MPICH built with thread support?)"));
  }
  // MPI_Comm_dup is a blocking collective; the non-blocking form is polled like everything.
  MPI_Request req;
  try {
    wait_polled(req, MPI_Comm_idup(MPI_COMM_WORLD, &comm_, &req), "MPI_Comm_idup");
  } catch (const std::runtime_error&) {
    if (owns_mpi_) MPI_Finalize();
    throw;
  }
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (flag && ub) tag_ub_ = *ub;
  goodbye_from_ = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(size_));
  lost_ = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(size_));
  farewell_ = std::make_unique<std::atomic<std::int64_t>[]>(static_cast<std::size_t>(size_));
  lost_status_ = std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) lost_status_[static_cast<std::size_t>(r)] = -1;
  // Names left by start-ups that SIGKILL cut short (no handler runs then): nobody else would.
  if (const int stale = remove_stale_wake_names())
    spdlog::debug("rank {}: removed {} wake-board names of processes that are gone", rank_,
                  stale);
  // Who shares this host first, then the wake-board names: while they exist every rank knows
  // them all, and a signal (Hydra forwards a Ctrl-C to every rank) removes them all.
  const std::uint64_t nonce = WakeBoard::random_nonce();
  const auto all = exchange_identities(nonce);
  wake_board_ = std::make_shared<WakeBoard>(WakeBoard::current_pid(), true, nonce);
  {
    std::vector<std::string> names;
    for (long key : host_keys_)
      if (key) names.push_back(WakeBoard::shm_name_of(key));
    StartupSignalGuard guard(names, rank_);
    barrier();  // every rank here has its name
    attach_wake_board(all);
    barrier();  // every peer has mapped our word: its name can go
    wake_board_->unlink_own();
  }
  {
    std::lock_guard lock(g_current_mu);
    g_current = this;
  }
  note_rank_stage(RankStage::in_job);
  // spdlog's registry first, so that it is destroyed after the handler has run (statics and
  // atexit handlers unwind in reverse order) and shutdown can still log.
  static const bool registered =
      (spdlog::default_logger_raw(), ::on_exit(shutdown_at_exit, nullptr), true);
  (void)registered;
  spdlog::debug("MPI environment up: rank {} of {}, {}, MPI_TAG_UB {}", rank_, size_,
                level_name(provided), tag_ub_);
}

// A polled MPI_Iallgather of one fixed-size record per rank.
template <class Record>
std::vector<Record> MpiEnvironment::allgather(const Record& mine) {
  std::vector<Record> all(static_cast<std::size_t>(size_));
  MPI_Request req;
  int rc;
  {
    std::lock_guard lock(*mutex_);
    rc = MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm_,
                        &req);
  }
  wait_polled(req, rc, "MPI_Iallgather");
  return all;
}

// MPI's node of this rank: the lowest MPI_COMM_WORLD rank that shares memory with it.
// MPI_Comm_split_type is a blocking collective with no non-blocking form; the polled
// barrier before it means every rank is there and it does not spin for long.
int MpiEnvironment::mpi_node() {
  barrier();
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return -1;
  MPI_Group node_group, world_group;
  MPI_Comm_group(node, &node_group);
  MPI_Comm_group(comm_, &world_group);
  const int first = 0;
  int leader = -1;
  MPI_Group_translate_ranks(node_group, 1, &first, world_group, &leader);
  MPI_Group_free(&node_group);
  MPI_Group_free(&world_group);
  MPI_Comm_free(&node);
  return leader;
}

// Which ranks share this host (watched by pid, woken through shared memory) and, when the job
// spans several hosts, the sockets that reach the others (mpi_hosts.hpp).
std::vector<HostIdentity> MpiEnvironment::exchange_identities(std::uint64_t wake_nonce) {
  auto me = HostIdentity::of_this_process(mpi_node(), wake_nonce);
  me.launcher_fd = launcher_socket_fd();
  const auto all = allgather(me);
  for (const auto& id : all) hosts_.emplace_back(id.host, ::strnlen(id.host, sizeof id.host));
  std::vector<long> keys(static_cast<std::size_t>(size_), 0);
  peer_pids_.assign(static_cast<std::size_t>(size_), 0);
  peer_fds_.assign(static_cast<std::size_t>(size_), -1);
  watcher_fds_.assign(static_cast<std::size_t>(size_), -1);
  launcher_fds_.assign(static_cast<std::size_t>(size_), -1);
  bool several_hosts = false;
  for (int r = 0; r < size_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    // Every rank sees the same records: all of them agree whether the job spans hosts.
    several_hosts = several_hosts || !same_host(all[i], all[0]);
    if (!same_host(all[i], me)) continue;
    keys[i] = static_cast<long>(all[i].pid);
    if (r == rank_) continue;
    peer_pids_[i] = all[i].pid;
    launcher_fds_[i] = all[i].launcher_fd;
#ifdef SYS_pidfd_open
    // A pidfd turns readable when the process ends, zombie or not (a launcher that does not
    // clean up may leave a dead rank unreaped, and kill(pid, 0) still finds those).
    peer_fds_[i] = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(all[i].pid), 0));
    if (all[i].watcher_pid)
      watcher_fds_[i] =
          static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(all[i].watcher_pid), 0));
#endif
  }
  several_hosts_ = several_hosts;
  host_keys_ = std::move(keys);
  return all;
}

void MpiEnvironment::attach_wake_board(const std::vector<HostIdentity>& all) {
  std::vector<std::uint64_t> nonces;
  for (const auto& id : all) nonces.push_back(id.wake_nonce);
  wake_board_->attach(host_keys_, rank_, nonces);
  wake_board_->set_crowded(crowded_ranks(all));
  if (several_hosts_) connect_hosts(host_keys_);
}

// Across hosts, MPICH's MPI_Finalize over UCX's TCP transport sometimes never returns: a
// rank waits in UCX for its endpoints to close while the peer it waits for already sits in
// the launcher's barrier, which does not progress UCX (docs/multi-host.md). Every rank has
// passed the shutdown barrier by then, so all the job's work is done: after a bound, the
// rank goes on (its program ends with its own status) and leaves MPI_Finalize to its thread.
void MpiEnvironment::finalize() {
  if (!several_hosts_) {
    MPI_Finalize();
    return;
  }
  // A peer that went on without finishing MPI_Finalize closes its sockets while this rank's
  // MPI may still write to them: that must not end this rank with SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  std::thread([done] {
    MPI_Finalize();
    done->set_value();
  }).detach();
  if (finished.wait_for(std::chrono::seconds(5)) == std::future_status::ready) return;
  spdlog::warn("rank {}: MPI_Finalize has not returned 5 s after every rank finished; going on "
               "without it (UCX's TCP transport waiting on a peer already in the launcher's "
               "barrier)", rank_);
}

// The job spans several hosts: every rank binds a UDP socket (wake-ups) and a TCP listener
// (death watch) on the address of its MPI network, and watches the next rank if that one is
// on another host (a rank on this host is watched by its pidfd): every rank is watched by
// the one before it.
void MpiEnvironment::connect_hosts(const std::vector<long>& keys) {
  std::string rule;
  const auto address = job_network_address(&rule);
  NetworkContact mine;
  if (address) {
    mine.ipv4 = address->s_addr;
    mine.wake_port = wake_board_->open_network(*address);
    mine.watch_port = watch_.listen(*address);
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &*address, text, sizeof text);
    spdlog::debug("rank {}: ranks on other hosts reach this one at {} ({})", rank_, text, rule);
  } else {
    spdlog::warn("rank {}: no network address for ranks on other hosts: they cannot wake this "
                 "rank or see it die", rank_);
  }
  const auto all = allgather(mine);
  std::vector<sockaddr_in> peers(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (keys[i] || !all[i].ipv4) continue;  // on this host, or unreachable
    peers[i].sin_family = AF_INET;
    peers[i].sin_addr.s_addr = all[i].ipv4;
    peers[i].sin_port = htons(all[i].wake_port);
  }
  wake_board_->attach_network(peers);
  const int next = (rank_ + 1) % size_;
  const auto& n = all[static_cast<std::size_t>(next)];
  if (next != rank_ && !keys[static_cast<std::size_t>(next)] && n.ipv4 && n.watch_port) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = n.ipv4;
    to.sin_port = htons(n.watch_port);
    watch_.watch(to);
    watched_rank_ = next;
  }
}

bool MpiEnvironment::peer_process_ended(int rank) const {
  const auto i = static_cast<std::size_t>(rank);
  if (peer_fds_[i] >= 0) {
    pollfd p{peer_fds_[i], POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
  return ::kill(static_cast<pid_t>(peer_pids_[i]), 0) == -1 && errno == ESRCH;
}

std::vector<int> MpiEnvironment::check_peers(bool now_please) {
  std::vector<int> lost;
  std::unique_lock lock(check_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return lost;
  const auto now = Clock::now();
  if (!now_please && now < next_check_) return lost;
  next_check_ = now + std::chrono::milliseconds(200);
  auto found_dead = [&](int r) {
    lost_[static_cast<std::size_t>(r)] = true;
    lost.push_back(r);
    spdlog::error("rank {}: rank {} died without saying GOODBYE: {}", rank_, r, how_lost(r));
  };
  for (int r = 0; r < size_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (!peer_pids_[i] || lost_[i] || goodbye_from_[i]) continue;
    if (!peer_process_ended(r)) continue;
    // Its launcher reaps it only once every rank here has closed its output: still a zombie.
    if (const auto status = exit_status_of(peer_pids_[i])) lost_status_[i] = *status;
    found_dead(r);
  }
  if (watched_rank_ >= 0 && !lost_[static_cast<std::size_t>(watched_rank_)] &&
      !goodbye_from_[static_cast<std::size_t>(watched_rank_)]) {
    const auto state = watch_.poll_state();
    if (state == PeerWatch::State::ended) {
      found_dead(watched_rank_);
    } else if (state == PeerWatch::State::failed) {
      spdlog::warn("rank {}: cannot watch rank {} on host {}: its death would go unnoticed here",
                   rank_, watched_rank_, host_of(watched_rank_));
      watched_rank_ = -1;
    }
  }
  return lost;
}

void MpiEnvironment::wait_for_peer_event(std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  // Only ranks still to watch: a pidfd stays readable once its process ended.
  for (int r = 0; r < size_; ++r)
    if (const int fd = peer_fds_[static_cast<std::size_t>(r)]; fd >= 0 && !is_lost(r) && !said_goodbye(r))
      fds.push_back({fd, POLLIN, 0});
  if (watched_rank_ >= 0 && watch_.fd() >= 0 && !is_lost(watched_rank_) && !said_goodbye(watched_rank_))
    fds.push_back({watch_.fd(), watch_.events(), 0});
  if (fds.empty()) std::this_thread::sleep_for(timeout);
  else ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
}

bool MpiEnvironment::wait_for_watcher(int rank, std::chrono::milliseconds timeout) const {
  if (rank < 0 || rank >= size_) return false;
  const int fd = watcher_fds_[static_cast<std::size_t>(rank)];
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

std::string MpiEnvironment::host_of(int rank) const {
  const auto i = static_cast<std::size_t>(rank);
  return i < hosts_.size() && !hosts_[i].empty() ? hosts_[i] : "?";
}

std::string MpiEnvironment::how_lost(int rank) const {
  const auto i = static_cast<std::size_t>(rank);
  if (rank < 0 || rank >= size_ || !peer_pids_[i]) return "its link to this host closed";
  const int status = lost_status_[i].load();
  if (status < 0) return fmt::format("pid {}", peer_pids_[i]);
  return fmt::format("pid {} {}", peer_pids_[i], describe_wait_status(status));
}

int MpiEnvironment::hold_launcher_links(bool hold) {
  std::lock_guard lock(links_mu_);
  links_.release();
  if (!hold) return 0;
  int held = 0;
  for (std::size_t i = 0; i < peer_fds_.size(); ++i) {
    if (peer_fds_[i] < 0) continue;
    bool any = false;
    for (int fd : {launcher_fds_[i], STDOUT_FILENO, STDERR_FILENO})
      any |= links_.hold(peer_fds_[i], fd);
    held += any ? 1 : 0;
  }
  return held;
}

bool MpiEnvironment::is_lost(int rank) const noexcept {
  return rank >= 0 && rank < size_ && lost_[static_cast<std::size_t>(rank)].load();
}

std::vector<int> MpiEnvironment::lost_without_goodbye() const {
  std::vector<int> out;
  for (int r = 0; r < size_; ++r)
    if (is_lost(r) && !said_goodbye(r)) out.push_back(r);
  return out;
}

MpiEnvironment::~MpiEnvironment() {
  shutdown();
  hold_launcher_links(false);
  for (const auto* fds : {&peer_fds_, &watcher_fds_})
    for (int fd : *fds)
      if (fd >= 0) ::close(fd);
  std::lock_guard lock(g_current_mu);
  if (g_current == this) g_current = nullptr;
}

MpiEnvironment* MpiEnvironment::current() noexcept {
  std::lock_guard lock(g_current_mu);
  return g_current;
}

std::string MpiEnvironment::error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<std::size_t>(len));
}

bool MpiEnvironment::is_shut_down() const noexcept { return shut_down_.load(); }

int MpiEnvironment::add_shutdown_hook(ShutdownHook hook) {
  std::lock_guard lock(hooks_mu_);
  hooks_.emplace_back(++next_hook_id_, std::move(hook));
  return next_hook_id_;
}

void MpiEnvironment::remove_shutdown_hook(int id) noexcept {
  std::lock_guard lock(hooks_mu_);
  std::erase_if(hooks_, [id](const auto& h) { return h.first == id; });
}

void MpiEnvironment::note_goodbye(int rank) noexcept {
  if (rank >= 0 && rank < size_) goodbye_from_[static_cast<std::size_t>(rank)] = true;
}

void MpiEnvironment::take_goodbye(MPI_Message& msg, const MPI_Status& status) {
  MPI_Count count = 0;
  MPI_Get_count_c(&status, MPI_BYTE, &count);
  std::vector<char> buf(static_cast<std::size_t>(std::max<MPI_Count>(count, 0)));
  MPI_Request req;
  if (MPI_Imrecv_c(buf.data(), count, MPI_BYTE, &msg, &req) == MPI_SUCCESS) {
    // A few bytes, matched: the first test completes it; the loop only guards a slow transport.
    for (int done = 0; !done;)
      if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
  }
  const int from = status.MPI_SOURCE;
  if (from < 0 || from >= size_) return;
  Farewell why;
  if (buf.size() >= sizeof goodbye_payload_) {
    std::int32_t words[2];
    std::memcpy(words, buf.data(), sizeof words);
    why = {static_cast<Farewell::Kind>(words[0]), words[1]};
  }
  farewell_[static_cast<std::size_t>(from)] = farewell_code(why);
  note_goodbye(from);
}

void MpiEnvironment::take_goodbyes() {
  std::lock_guard lock(*mutex_);
  if (comm_ == MPI_COMM_NULL) return;  // shut down: comm_ was freed
  for (;;) {
    int found = 0;
    MPI_Message msg;
    MPI_Status st;
    const int rc = MPI_Improbe(MPI_ANY_SOURCE, kControlTag, comm_, &found, &msg, &st);
    if (rc != MPI_SUCCESS || !found) return;
    take_goodbye(msg, st);
  }
}

std::optional<Farewell> MpiEnvironment::farewell_of(int rank) const noexcept {
  if (rank < 0 || rank >= size_) return std::nullopt;
  const auto code = farewell_[static_cast<std::size_t>(rank)].load();
  if (code == 0) return std::nullopt;
  return Farewell{static_cast<Farewell::Kind>((code >> 32) - 1),
                  static_cast<std::int32_t>(static_cast<std::uint32_t>(code))};
}

bool MpiEnvironment::said_goodbye(int rank) const noexcept {
  return rank >= 0 && rank < size_ && goodbye_from_[static_cast<std::size_t>(rank)].load();
}

void MpiEnvironment::barrier() {
  if (shut_down_) throw std::runtime_error("MpiEnvironment::barrier() after shutdown()");
  MPI_Request req;
  int rc;
  {
    std::lock_guard lock(*mutex_);
    rc = MPI_Ibarrier(comm_, &req);
  }
  wait_polled(req, rc, "MPI_Ibarrier");
}

bool MpiEnvironment::wait_polled(MPI_Request& request, int started, const char* what,
                                 Clock::time_point deadline) {
  MpiBackoff backoff(options_.poll);
  for (int rc = started, done = 0;;) {
    if (rc == MPI_SUCCESS) {
      std::lock_guard lock(*mutex_);
      rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
    if (rc != MPI_SUCCESS)
      throw std::runtime_error(std::string(what) + " failed: " + error_string(rc));
    if (done) return true;
    if (Clock::now() >= deadline) return false;
    backoff.sleep();
  }
}

void MpiEnvironment::shutdown(Farewell why) noexcept {
  std::lock_guard once(shutdown_mu_);
  if (shut_down_) return;
  abort_if_peers_lost();
  const auto deadline = options_.shutdown_timeout.count() > 0
                            ? Clock::now() + options_.shutdown_timeout
                            : Clock::time_point::max();
  std::vector<std::pair<int, ShutdownHook>> hooks;
  {
    std::lock_guard lock(hooks_mu_);
    hooks.swap(hooks_);
  }
  for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) {
    try {
      it->second(deadline);
    } catch (const std::exception& e) {
      spdlog::error("MPI shutdown hook failed: {}", e.what());
    }
  }
  hooks.clear();
  try {
    drain_and_goodbye(deadline, why);
  } catch (const std::exception& e) {
    abort_job(fmt::format("rank {}: MPI shutdown failed: {}", rank_, e.what()));
  }
  {
    std::lock_guard lock(*mutex_);
    MPI_Comm_free(&comm_);
    if (owns_mpi_) finalize();
  }
  shut_down_ = true;
  spdlog::debug("MPI environment of rank {} shut down", rank_);
}

std::vector<MPI_Request> MpiEnvironment::send_goodbyes(Farewell why) {
  std::vector<MPI_Request> sends;
  goodbye_payload_[0] = static_cast<std::int32_t>(why.kind);
  goodbye_payload_[1] = why.code;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request req;
    const int rc = MPI_Isend(goodbye_payload_, sizeof goodbye_payload_, MPI_BYTE, r, kControlTag,
                             comm_, &req);
    if (rc != MPI_SUCCESS) throw std::runtime_error("GOODBYE: " + error_string(rc));
    sends.push_back(req);
    wake_board_->wake(r);  // its poller may be asleep
  }
  note_rank_stage(RankStage::left);  // its end says nothing the others do not know now
  return sends;
}

// Whatever still arrives is received in full and dropped (a short receive would report
// MPI_ERR_TRUNCATE, and MPICH raises errors of multi-request calls on MPI_COMM_WORLD).
bool MpiEnvironment::take_and_discard(Discards& discards) {
  bool progress = false;
  for (;;) {
    int found = 0;
    MPI_Message msg;
    MPI_Status st;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &found, &msg, &st);
    if (rc != MPI_SUCCESS) throw std::runtime_error("MPI_Improbe: " + error_string(rc));
    if (!found) return progress;
    progress = true;
    if (st.MPI_TAG == kControlTag) {
      take_goodbye(msg, st);
      continue;
    }
    MPI_Count count = 0;
    MPI_Get_count_c(&st, MPI_BYTE, &count);
    std::unique_ptr<char[]> buf(count > 0 ? new char[static_cast<std::size_t>(count)] : nullptr);
    MPI_Request req;
    rc = MPI_Imrecv_c(buf.get(), count, MPI_BYTE, &msg, &req);
    if (rc != MPI_SUCCESS) throw std::runtime_error("MPI_Imrecv: " + error_string(rc));
    discards.emplace_back(req, std::move(buf));
  }
}

void MpiEnvironment::drain_and_goodbye(Clock::time_point deadline, Farewell why) {
  std::vector<MPI_Request> sends;
  Discards discards;
  {
    std::lock_guard lock(*mutex_);
    sends = send_goodbyes(why);
  }
  auto missing = [&] {
    std::vector<int> out;
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && !said_goodbye(r)) out.push_back(r);
    return out;
  };
  MpiBackoff backoff(options_.poll);
  auto next_report = Clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool progress = false, sends_done = false, discards_done = false;
    {
      std::lock_guard lock(*mutex_);
      progress = take_and_discard(discards);
      int flag = 0;
      MPI_Testall(static_cast<int>(sends.size()), sends.data(), &flag, MPI_STATUSES_IGNORE);
      sends_done = flag != 0;
      std::erase_if(discards, [](auto& d) {
        int done = 0;
        MPI_Test(&d.first, &done, MPI_STATUS_IGNORE);
        return done != 0;
      });
      discards_done = discards.empty();
    }
    if (sends_done && discards_done && missing().empty()) break;
    abort_if_peers_lost();
    const auto now = Clock::now();
    if (now >= deadline)
      abort_job(fmt::format("rank {}: ranks {} did not say GOODBYE within {} ms of shutdown; "
                            "ending the job",
                            rank_, missing(), options_.shutdown_timeout.count()));
    if (now >= next_report) {
      spdlog::info("rank {}: shutdown is waiting for GOODBYE from ranks {}", rank_, missing());
      next_report = now + std::chrono::seconds(10);
    }
    if (progress) backoff.reset();
    else backoff.sleep();
  }
  shutdown_barrier(deadline);
}

void MpiEnvironment::shutdown_barrier(Clock::time_point deadline) {
  MPI_Request barrier;
  int rc;
  {
    std::lock_guard lock(*mutex_);
    rc = MPI_Ibarrier(comm_, &barrier);
  }
  if (!wait_polled(barrier, rc, "MPI_Ibarrier", deadline))
    abort_job(fmt::format("rank {}: the shutdown barrier did not complete within {} ms", rank_,
                          options_.shutdown_timeout.count()));
}

void MpiEnvironment::abort_if_peers_lost() {
  check_peers();
  auto lost = lost_without_goodbye();
  if (lost.empty()) return;
  // Their watchers name them first (rank_watcher.hpp): MPI_Abort must not end the job before.
  for (int r : lost) wait_for_watcher(r, kWatcherLine);
  abort_job(fmt::format("rank {}: ranks {} died without GOODBYE; MPI cannot finalise with a "
                        "dead rank, ending the job",
                        rank_, lost));
}

void MpiEnvironment::abort_job(const std::string& why) noexcept {
  note_rank_stage(RankStage::ending_job);  // it has named why itself
  spdlog::critical("{}", why);
  spdlog::default_logger()->flush();
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

}  // namespace taskwire::comm::mpi
