#pragma once
// Which ranks of an MPI job share this host, and how ranks on other hosts reach this one.
//
// "Same host" means more than "same MPI node" here: a rank counted local is watched by its
// process id (pidfd) and woken through shared memory, so it must share this process's boot,
// PID, network (abstract UNIX sockets) and mount (/dev/shm) namespaces. MPI's own node
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED) comes first; the namespaces are checked on
// top, because ranks that hydra starts on one node may still live in separate namespaces
// (containers, emulated hosts), where a raw pid names another process or none.
//
// Ranks on other hosts get two sockets of each rank, bound on the address of the network
// its MPI traffic uses (job_network_address()): a UDP socket that wakes an idle rank
// (WakeBoard) and a TCP listener whose connection closes when the rank's process
// ends, however it ends (PeerWatch), so that a rank that dies on another host is noticed
// within a poll, not at the end of an MPI timeout or never.
#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskwire::comm::mpi {

/// What a rank tells every other at start-up (one fixed-size record of an MPI_Allgather).
struct HostIdentity {
  std::int32_t node = -1;  ///< lowest MPI_COMM_WORLD rank of its MPI_COMM_TYPE_SHARED group
  std::int32_t cores = 0;  ///< the cores it may run on (available_cores())
  std::int64_t pid = 0;
  std::int64_t watcher_pid = 0;  ///< its watcher's (rank_watcher.hpp), 0 when it has none
  std::uint64_t wake_nonce = 0;  ///< written on its wake-board page: proves the page is its
  std::int32_t launcher_fd = -1;  ///< its launcher socket's number (launcher_socket_fd())
  std::uint64_t pid_ns = 0, net_ns = 0, mnt_ns = 0;  ///< inode numbers of /proc/self/ns/*
  char boot_id[40] = {};  ///< /proc/sys/kernel/random/boot_id
  char host[64] = {};     ///< its host name, for messages

  /// This process's record (the namespaces and boot id read from /proc; zero when unreadable,
  /// which never matches).
  static HostIdentity of_this_process(int node, std::uint64_t wake_nonce);
};

/// Whether two ranks can watch each other by pid and share memory (see above).
bool same_host(const HostIdentity& a, const HostIdentity& b) noexcept;

/// Whether two ranks run on one kernel, and so share its cores, whatever namespaces they
/// live in (emulated hosts, containers): the same boot id.
bool same_kernel(const HostIdentity& a, const HostIdentity& b) noexcept;

/// For each rank: whether more ranks of the job run on its kernel than it has cores. Such a
/// rank's polling takes the core another rank needs, including a rank "on another host"
/// that is only another network namespace of the same machine.
std::vector<bool> crowded_ranks(const std::vector<HostIdentity>& all);

/// The cores this process may run on (its CPU affinity), at least 1.
int available_cores() noexcept;

/// The second record, exchanged only when the job spans several hosts.
struct NetworkContact {
  std::uint32_t ipv4 = 0;  ///< network byte order; 0: none
  std::uint16_t wake_port = 0;   ///< UDP; 0: cannot be woken from other hosts
  std::uint16_t watch_port = 0;  ///< TCP; 0: cannot be watched from other hosts
};

/// The IPv4 address this rank's MPI traffic leaves from, for sockets that ranks on other
/// hosts reach: the first device of UCX_NET_DEVICES that has one, else the interface hydra
/// was told (-iface, passed on as MPIR_CVAR_CH3_INTERFACE_HOSTNAME), else the interface of
/// the default route, else the first non-loopback interface that is up. Never 0.0.0.0;
/// nullopt when there is none. `why` says which rule chose it.
std::optional<in_addr> job_network_address(std::string* why = nullptr);

/// A non-blocking socket of `type` (SOCK_DGRAM, or SOCK_STREAM then listening) bound on
/// `address`, any port (set in `port`); -1 with errno on failure.
int bound_socket(int type, in_addr address, std::uint16_t& port);

/// A TCP connection to a rank on another host, used only for its end: the kernel closes it
/// when that rank's process ends, crash or SIGKILL included. Never throws.
class PeerWatch {
 public:
  PeerWatch() = default;
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  /// Listens on `address` (any port); returns the port, 0 on failure. The listener only
  /// accepts into the kernel's queue: a watcher's connection needs no accept() to end when
  /// this process does.
  std::uint16_t listen(in_addr address);
  /// Starts a non-blocking connection to the rank at `to` (address and port).
  void watch(const sockaddr_in& to);
  enum class State { none, connecting, watching, ended, failed };
  /// Looks (without blocking) whether the watched rank's process ended.
  State poll_state();
  /// What to wait on with poll() for events() (a change of poll_state()), -1 for none.
  int fd() const noexcept { return watching_ == State::connecting || watching_ == State::watching ? fd_ : -1; }
  short events() const noexcept;

 private:
  int listen_fd_ = -1;
  int fd_ = -1;
  State watching_ = State::none;
};

}  // namespace taskwire::comm::mpi
