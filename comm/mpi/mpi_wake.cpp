#include <taskwire/comm/mpi/mpi_wake.hpp>

#include <taskwire/comm/mpi/mpi_hosts.hpp>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <random>
#include <string_view>

namespace taskwire::comm::mpi {
namespace {

constexpr std::size_t kWordBytes = 4096;


// Abstract-namespace address (leading NUL): vanishes with the socket.
socklen_t socket_address(long key, sockaddr_un& a) {
  std::memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  const std::string name = "taskwire-wake-" + std::to_string(key);
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// Next to the word, on its page: the owner's pid and eventfd, for peers to take a copy of.
struct Contact {
  std::int64_t pid;
  std::int32_t event_fd;
  std::uint64_t nonce;
};
constexpr std::size_t kContactOffset = 64;
Contact* contact_of(std::atomic<std::uint32_t>* word) {
  return reinterpret_cast<Contact*>(reinterpret_cast<char*>(word) + kContactOffset);
}

// A copy of eventfd `fd` of process `pid` (pidfd_getfd, Linux 5.6: ptrace rights over the
// process, as process_vm_readv needs; a seccomp filter may still refuse it); -1 when not
// allowed, or when what it names is not an eventfd (a stale page of a reused pid).
int copy_event_fd_of(std::int64_t pid, int fd) {
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_getfd)
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (pidfd < 0) return -1;
  const int copy = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  ::close(pidfd);
  if (copy < 0) return -1;
  char target[64] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(copy);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  if (n <= 0 || std::string_view(target, static_cast<std::size_t>(n)) != "anon_inode:[eventfd]") {
    ::close(copy);
    return -1;
  }
  return copy;
#else
  (void)pid;
  (void)fd;
  return -1;
#endif
}

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::atomic<std::uint32_t>* map_word(int fd) {
  void* p = ::mmap(nullptr, kWordBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<std::atomic<std::uint32_t>*>(p);
}

}  // namespace

long WakeBoard::current_pid() noexcept { return ::getpid(); }

std::uint64_t WakeBoard::random_nonce() {
  return (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
}

std::string WakeBoard::shm_name_of(long key) { return "/taskwire-wake-" + std::to_string(key); }

WakeBoard::WakeBoard(long key, bool with_event_fd, std::uint64_t nonce) {
  static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
  nonce_ = nonce ? nonce : random_nonce();
  own_name_ = shm_name_of(key);
  // A stale name from a dead process with the same pid is simply reused.
  const int shm = ::shm_open(own_name_.c_str(), O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
  if (shm < 0 || ::ftruncate(shm, kWordBytes) != 0) {
    spdlog::debug("wake board: no shared memory ({}): idle MPI ranks are not woken", std::strerror(errno));
    if (shm >= 0) ::close(shm);
    own_name_.clear();
    return;
  }
  own_ = map_word(shm);
  ::close(shm);
  if (!own_) return;
  new (own_) std::atomic<std::uint32_t>(kAwake);
  if (with_event_fd) event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  *contact_of(own_) = Contact{::getpid(), event_fd_, nonce_};
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un a;
  const socklen_t len = socket_address(key, a);
  if (fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    spdlog::debug("wake board: cannot bind its socket ({})", std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
  }
}

WakeBoard::~WakeBoard() {
  unlink_own();
  if (fd_ >= 0) ::close(fd_);
  if (event_fd_ >= 0) ::close(event_fd_);
  if (net_fd_ >= 0) ::close(net_fd_);
  for (int fd : peer_event_fds_)
    if (fd >= 0) ::close(fd);
  for (auto* w : words_)  // peers' words only: attach() skips this rank
    if (w) ::munmap(w, kWordBytes);
  if (own_) ::munmap(own_, kWordBytes);
}

void WakeBoard::attach(const std::vector<long>& keys, int own_rank,
                       const std::vector<std::uint64_t>& nonces) {
  keys_ = keys;
  own_rank_ = own_rank;
  last_message_ = std::make_unique<std::atomic<std::int64_t>[]>(keys.size());
  last_datagram_ = std::make_unique<std::atomic<std::int64_t>[]>(keys.size());
  for (std::size_t r = 0; r < keys.size(); ++r) last_message_[r] = last_datagram_[r] = INT64_MIN / 2;
  words_.assign(keys.size(), nullptr);
  for (int fd : peer_event_fds_)
    if (fd >= 0) ::close(fd);
  peer_event_fds_.assign(keys.size(), -1);
  all_attached_ = usable();
  local_ranks_ = 1;
  for (std::size_t r = 0; r < keys.size(); ++r) {
    if (static_cast<int>(r) == own_rank) continue;
    if (keys[r]) {  // 0: another host
      ++local_ranks_;
      const int shm = ::shm_open(shm_name_of(keys[r]).c_str(), O_RDWR | O_CLOEXEC, 0);
      if (shm >= 0) {
        words_[r] = map_word(shm);
        ::close(shm);
        if (words_[r] && r < nonces.size() && contact_of(words_[r])->nonce != nonces[r]) {
          spdlog::debug("wake board: the page of rank {} is not its own: not woken through it", r);
          ::munmap(words_[r], kWordBytes);
          words_[r] = nullptr;
        }
        if (words_[r] && contact_of(words_[r])->event_fd >= 0)
          peer_event_fds_[r] =
              copy_event_fd_of(contact_of(words_[r])->pid, contact_of(words_[r])->event_fd);
      }
    }
    if (!words_[r]) all_attached_ = false;
  }
}

std::uint16_t WakeBoard::open_network(in_addr address) {
  std::uint16_t port = 0;
  net_fd_ = bound_socket(SOCK_DGRAM, address, port);
  if (net_fd_ < 0)
    spdlog::warn("wake board: no UDP socket for wake-ups from other hosts ({})", std::strerror(errno));
  return port;
}

// Keys are 0 for ranks on other hosts: those need an address, the others a mapped word.
void WakeBoard::attach_network(const std::vector<sockaddr_in>& peers) {
  net_peers_ = peers;
  net_peers_.resize(keys_.size());
  bool all = usable();
  remote_peers_ = false;
  for (std::size_t r = 0; r < keys_.size(); ++r) {
    if (static_cast<int>(r) == own_rank_) continue;
    if (reaches_by_network(static_cast<int>(r))) remote_peers_ = true;
    else if (!words_[r]) all = false;
  }
  all_attached_ = all;
}

void WakeBoard::set_crowded(std::vector<bool> crowded) {
  crowded.resize(keys_.size(), false);
  own_crowded_ = static_cast<std::size_t>(own_rank_) < crowded.size() && crowded[own_rank_];
  crowded_ = std::move(crowded);
}

void WakeBoard::unlink_own() noexcept {
  if (!own_name_.empty()) ::shm_unlink(own_name_.c_str());
  own_name_.clear();
}

bool WakeBoard::reaches(int rank) const noexcept {
  return fd_ >= 0 && rank >= 0 && static_cast<std::size_t>(rank) < words_.size() && words_[rank];
}

void WakeBoard::drain() noexcept {
  if (fd_ < 0) return;
  char buf[64];
  while (::recv(fd_, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  std::uint64_t count;
  if (event_fd_ >= 0 && ::read(event_fd_, &count, sizeof count) < 0) {
  }
  while (net_fd_ >= 0 && ::recv(net_fd_, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
}

void WakeBoard::wake(int rank) noexcept {
  if (reaches_by_network(rank)) {
    const auto now = now_ns();
    const bool at_once = static_cast<std::size_t>(rank) < crowded_.size() && crowded_[rank];
    const auto quiet = at_once ? 0 : std::chrono::nanoseconds(kRemoteSleepAfter).count() / 2;
    const auto last = last_message_[static_cast<std::size_t>(rank)].exchange(now, std::memory_order_relaxed);
    if (now - last >= quiet) send_datagram(rank);
    return;
  }
  if (!reaches(rank)) return;
  auto* w = words_[static_cast<std::size_t>(rank)];
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the MPI_Isend before, the load after
  if (w->load(std::memory_order_seq_cst) == kAwake) return;
  if (w->exchange(kAwake, std::memory_order_seq_cst) == kAwake) return;  // someone else woke it
  send_wake(rank);
}

void WakeBoard::rewake(int rank) noexcept {
  if (!reaches_by_network(rank)) return wake(rank);
  const auto now = now_ns();
  const auto last = last_datagram_[static_cast<std::size_t>(rank)].load(std::memory_order_relaxed);
  if (now - last >= std::chrono::nanoseconds(kRemoteRewakeEvery).count()) send_datagram(rank);
}

void WakeBoard::send_datagram(int rank) noexcept {
  const auto& to = net_peers_[static_cast<std::size_t>(rank)];
  last_datagram_[static_cast<std::size_t>(rank)].store(now_ns(), std::memory_order_relaxed);
  const char byte = 'w';
  ::sendto(net_fd_, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), sizeof to);
}

void WakeBoard::wake_if_awaiting_sends(int rank) noexcept {
  if (!reaches(rank)) return;
  auto* w = words_[static_cast<std::size_t>(rank)];
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the receive before, the load after
  std::uint32_t awaiting = kAwaitingSends;
  if (w->load(std::memory_order_seq_cst) != kAwaitingSends) return;
  if (!w->compare_exchange_strong(awaiting, kAwake, std::memory_order_seq_cst)) return;
  send_wake(rank);
}

// An eventfd write wakes the peer as an ordinary wake-up; a datagram on a UNIX socket is a
// "synchronous" one, on which Linux puts the woken task on the waker's CPU, expecting the
// waker to sleep: a waker that goes on polling then holds the peer off its CPU.
void WakeBoard::send_wake(int rank) noexcept {
  if (const int efd = peer_event_fds_[static_cast<std::size_t>(rank)]; efd >= 0) {
    const std::uint64_t one = 1;
    if (::write(efd, &one, sizeof one) == sizeof one) return;
  }
  sockaddr_un a;
  const socklen_t len = socket_address(keys_[static_cast<std::size_t>(rank)], a);
  const char byte = 'w';
  ::sendto(fd_, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&a), len);
}

}  // namespace taskwire::comm::mpi
