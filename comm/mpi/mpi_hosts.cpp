#include <taskwire/comm/mpi/mpi_hosts.hpp>
#include <taskwire/comm/mpi/rank_watcher.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_map>

namespace taskwire::comm::mpi {
namespace {

std::uint64_t namespace_inode(const char* which) {
  struct stat st {};
  const std::string path = std::string("/proc/self/ns/") + which;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

// The IPv4 address of interface `name` (up), if it has one.
std::optional<in_addr> interface_address(const std::string& name) {
  ifaddrs* all = nullptr;
  if (name.empty() || ::getifaddrs(&all) != 0) return std::nullopt;
  std::optional<in_addr> found;
  for (auto* i = all; i && !found; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) && name == i->ifa_name)
      found = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
  ::freeifaddrs(all);
  return found;
}

// The interface of the default IPv4 route (/proc/net/route: destination 00000000).
std::string default_route_interface() {
  std::ifstream routes("/proc/net/route");
  std::string line, name, destination;
  std::getline(routes, line);  // the header
  while (std::getline(routes, line)) {
    std::istringstream fields(line);
    if (fields >> name >> destination && destination == "00000000") return name;
  }
  return {};
}

std::optional<in_addr> first_non_loopback_address() {
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return std::nullopt;
  std::optional<in_addr> found;
  for (auto* i = all; i && !found; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
        !(i->ifa_flags & IFF_LOOPBACK))
      found = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
  ::freeifaddrs(all);
  return found;
}

// "mlx5_0:1,eth0" -> the first entry naming an interface with an address ("all": none).
std::optional<in_addr> ucx_device_address(const char* devices) {
  if (!devices) return std::nullopt;
  std::istringstream list(devices);
  for (std::string device; std::getline(list, device, ',');) {
    device = device.substr(0, device.find(':'));
    if (device == "all") return std::nullopt;
    if (auto a = interface_address(device)) return a;
  }
  return std::nullopt;
}

int nonblocking_socket(int type) {
  return ::socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

}  // namespace

HostIdentity HostIdentity::of_this_process(int node, std::uint64_t wake_nonce) {
  HostIdentity id;
  id.node = node;
  id.pid = ::getpid();
  id.watcher_pid = rank_watcher_pid();
  id.cores = available_cores();
  id.wake_nonce = wake_nonce;
  id.pid_ns = namespace_inode("pid");
  id.net_ns = namespace_inode("net");
  id.mnt_ns = namespace_inode("mnt");
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string text;
  if (boot >> text) std::strncpy(id.boot_id, text.c_str(), sizeof id.boot_id - 1);
  ::gethostname(id.host, sizeof id.host - 1);
  return id;
}

bool same_kernel(const HostIdentity& a, const HostIdentity& b) noexcept {
  return a.boot_id[0] && std::strncmp(a.boot_id, b.boot_id, sizeof a.boot_id) == 0;
}

// One pass to count the ranks per boot id, one to compare: jobs have thousands of ranks.
std::vector<bool> crowded_ranks(const std::vector<HostIdentity>& all) {
  auto boot_id = [](const HostIdentity& id) {
    return std::string(id.boot_id, ::strnlen(id.boot_id, sizeof id.boot_id));
  };
  std::unordered_map<std::string, int> per_kernel;
  for (const auto& id : all)
    if (id.boot_id[0]) ++per_kernel[boot_id(id)];
  std::vector<bool> crowded(all.size(), false);
  for (std::size_t r = 0; r < all.size(); ++r) {
    const int sharing = all[r].boot_id[0] ? per_kernel[boot_id(all[r])] : 1;
    crowded[r] = sharing > std::max(1, all[r].cores);
  }
  return crowded;
}

int available_cores() noexcept {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

bool same_host(const HostIdentity& a, const HostIdentity& b) noexcept {
  return a.node == b.node && a.node >= 0 && a.pid_ns && a.pid_ns == b.pid_ns && a.net_ns &&
         a.net_ns == b.net_ns && a.mnt_ns && a.mnt_ns == b.mnt_ns && a.boot_id[0] &&
         std::strncmp(a.boot_id, b.boot_id, sizeof a.boot_id) == 0;
}

std::optional<in_addr> job_network_address(std::string* why) {
  auto chosen = [&](std::optional<in_addr> a, const std::string& rule) {
    if (a && why) *why = rule;
    return a;
  };
  if (auto a = ucx_device_address(std::getenv("UCX_NET_DEVICES")))
    return chosen(a, "the first device of UCX_NET_DEVICES");
  if (const char* iface = std::getenv("MPIR_CVAR_NEMESIS_TCP_NETWORK_IFACE"))
    if (auto a = interface_address(iface)) return chosen(a, "hydra's -iface");
  if (auto a = interface_address(default_route_interface()))
    return chosen(a, "the interface of the default route");
  return chosen(first_non_loopback_address(), "the first non-loopback interface");
}

PeerWatch::~PeerWatch() {
  if (fd_ >= 0) ::close(fd_);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

int bound_socket(int type, in_addr address, std::uint16_t& port) {
  int fd = nonblocking_socket(type);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr = address;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      (type == SOCK_STREAM && ::listen(fd, 8) != 0) ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    errno = error;
    return -1;
  }
  port = ntohs(a.sin_port);
  return fd;
}

std::uint16_t PeerWatch::listen(in_addr address) {
  std::uint16_t port = 0;
  listen_fd_ = bound_socket(SOCK_STREAM, address, port);
  if (listen_fd_ < 0)
    spdlog::warn("cannot listen for the death watch of ranks on other hosts: {}", std::strerror(errno));
  return port;
}

void PeerWatch::watch(const sockaddr_in& to) {
  fd_ = nonblocking_socket(SOCK_STREAM);
  if (fd_ < 0) {
    watching_ = State::failed;
    return;
  }
  const int rc = ::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  watching_ = rc == 0 ? State::watching : errno == EINPROGRESS ? State::connecting : State::failed;
}

short PeerWatch::events() const noexcept {
  return static_cast<short>(POLLIN | POLLRDHUP | (watching_ == State::connecting ? POLLOUT : 0));
}

PeerWatch::State PeerWatch::poll_state() {
  if (watching_ != State::connecting && watching_ != State::watching) return watching_;
  pollfd p{fd_, events(), 0};
  if (::poll(&p, 1, 0) != 1) return watching_;
  if (watching_ == State::connecting) {
    int error = 0;
    socklen_t len = sizeof error;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len);
    // Refused or unreachable before it was ever up: the watch is broken, the rank is not
    // known dead (it took part in the start-up exchange).
    watching_ = error == 0 && !(p.revents & (POLLHUP | POLLERR)) ? State::watching : State::failed;
    if (watching_ == State::failed || !(p.revents & (POLLIN | POLLRDHUP))) return watching_;
  }
  // The watched rank never writes: anything readable, a hang-up or an error is its end.
  watching_ = State::ended;
  return watching_;
}

}  // namespace taskwire::comm::mpi
