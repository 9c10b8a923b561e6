// comm::mpi::WakeBoard (mpi_wake.hpp) without MPI: two boards in this process stand for two
// ranks on one host (keys other than the pid keep them apart from the process's own).
#include <taskwire/comm/mpi/mpi_wake.hpp>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

namespace {

using taskwire::comm::mpi::WakeBoard;

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1;
}

long key(int n) { return static_cast<long>(::getpid()) * 1000 + 900 + n; }

// Woken by either path: the eventfd a peer holds a copy of, or a datagram.
bool woken(const WakeBoard& b, int timeout_ms) {
  pollfd p[2] = {{b.fd(), POLLIN, 0}, {b.event_fd(), POLLIN, 0}};
  return ::poll(p, b.event_fd() >= 0 ? 2 : 1, timeout_ms) >= 1;
}

// Two boards standing for ranks 0 and 1 of one host, attached to each other.
struct Ranks {
  Ranks(int n, bool second_has_event_fd = true)
      : a(key(n)), b(key(n + 1), second_has_event_fd) {
    REQUIRE(a.usable());
    REQUIRE(b.usable());
    const std::vector<long> keys{key(n), key(n + 1)};
    a.attach(keys, 0);
    b.attach(keys, 1);
    a.unlink_own();  // both mapped each other: the names can go, the mappings stay
    b.unlink_own();
  }
  WakeBoard a, b;
};

}  // namespace

TEST_CASE("a rank wakes a sleeping peer once per sleep, and never an awake one", "[runtime][wake]") {
  Ranks ranks(1);
  auto& [a, b] = ranks;
  CHECK(a.reaches(1));
  CHECK_FALSE(a.reaches(0));
  CHECK_FALSE(a.reaches(2));
  CHECK(a.local_ranks() == 2);
  CHECK(a.all_peers_reach_me());
  CHECK(b.all_peers_reach_me());

  a.wake(1);  // b is awake: nothing sent
  CHECK_FALSE(woken(b, 50));

  b.own_word()->store(WakeBoard::kSleeping);
  a.wake(1);
  CHECK(b.own_word()->load() == WakeBoard::kAwake);
  CHECK(woken(b, 5000));
  b.drain();
  CHECK_FALSE(woken(b, 0));

  a.wake(1);  // woken already, not asleep again: no second datagram
  CHECK_FALSE(woken(b, 50));

  a.own_word()->store(WakeBoard::kSleeping);  // and the other way round
  b.wake(0);
  CHECK(woken(a, 5000));
  CHECK(a.own_word()->load() == WakeBoard::kAwake);
}

TEST_CASE("a receiver wakes a sender only while it sleeps awaiting its sends", "[runtime][wake]") {
  Ranks ranks(5);
  auto& [a, b] = ranks;

  b.own_word()->store(WakeBoard::kSleeping);  // asleep, no message waiting behind a send
  a.wake_if_awaiting_sends(1);
  CHECK(b.own_word()->load() == WakeBoard::kSleeping);
  CHECK_FALSE(woken(b, 50));

  b.own_word()->store(WakeBoard::kAwaitingSends);
  a.wake_if_awaiting_sends(1);
  CHECK(b.own_word()->load() == WakeBoard::kAwake);
  CHECK(woken(b, 5000));
  b.drain();
  a.wake_if_awaiting_sends(1);  // awake now: nothing more
  CHECK_FALSE(woken(b, 50));

  b.own_word()->store(WakeBoard::kAwaitingSends);  // a message to it wakes it as any sleep
  a.wake(1);
  CHECK(b.own_word()->load() == WakeBoard::kAwake);
  CHECK(woken(b, 5000));
}

TEST_CASE("a wake-up goes by eventfd where the peer's can be copied, else by datagram",
          "[runtime][wake]") {
  Ranks ranks(7, /*second_has_event_fd=*/false);
  auto& [a, b] = ranks;
  REQUIRE(a.event_fd() >= 0);  // eventfd(2): Linux
  CHECK(a.reaches(1));
  CHECK_FALSE(a.wakes_by_event_fd(1));  // b has none to copy

  b.own_word()->store(WakeBoard::kSleeping);  // so a datagram
  a.wake(1);
  CHECK(readable(b.fd(), 5000));
  b.drain();

  // a has one; b copies it unless the system refuses pidfd_getfd (seccomp, kernel < 5.6),
  // and then wakes a by datagram: either way a is woken, by the path b said it would take.
  a.own_word()->store(WakeBoard::kSleeping);
  b.wake(0);
  if (b.wakes_by_event_fd(0)) {
    CHECK(readable(a.event_fd(), 5000));
    CHECK_FALSE(readable(a.fd(), 0));
  } else {
    WARN("pidfd_getfd refused here: the datagram path stands in");
    CHECK(readable(a.fd(), 5000));
  }
  a.drain();
  CHECK_FALSE(readable(a.event_fd(), 0));
  CHECK_FALSE(readable(a.fd(), 0));
}

TEST_CASE("a peer that is not on this host (or gone) is not reachable", "[runtime][wake]") {
  WakeBoard a(key(3));
  REQUIRE(a.usable());
  a.attach({key(3), 0, key(4)}, 0);  // rank 1 on another host; rank 2 never created its word
  CHECK_FALSE(a.reaches(1));
  CHECK_FALSE(a.reaches(2));
  CHECK(a.local_ranks() == 2);
  CHECK_FALSE(a.all_peers_reach_me());
  a.wake(1);  // harmless
  a.wake(2);
  a.wake(-1);
}

namespace {

sockaddr_in loopback_port(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return a;
}

// Two boards standing for ranks 0 and 1 on different hosts: no shared word (key 0), a UDP
// socket each on loopback.
struct RemoteRanks {
  explicit RemoteRanks(int n) : a(key(n)), b(key(n + 1)) {
    REQUIRE(a.usable());
    REQUIRE(b.usable());
    a.attach({key(n), 0}, 0);
    b.attach({0, key(n + 1)}, 1);
    in_addr loopback{htonl(INADDR_LOOPBACK)};
    port_a = a.open_network(loopback);
    port_b = b.open_network(loopback);
    REQUIRE(port_a != 0);
    REQUIRE(port_b != 0);
  }
  void connect() {
    a.attach_network({sockaddr_in{}, loopback_port(port_b)});
    b.attach_network({loopback_port(port_a), sockaddr_in{}});
  }
  WakeBoard a, b;
  std::uint16_t port_a = 0, port_b = 0;
};

}  // namespace

TEST_CASE("a rank on another host is woken by datagram, once per quiet spell", "[runtime][wake]") {
  RemoteRanks ranks(11);
  auto& a = ranks.a;
  auto& b = ranks.b;
  CHECK_FALSE(a.all_peers_reach_me());  // before the addresses are known
  ranks.connect();
  CHECK(a.reaches_by_network(1));
  CHECK_FALSE(a.reaches(1));
  CHECK(a.has_remote_peers());
  CHECK(a.all_peers_reach_me());

  a.wake(1);  // the first message: a datagram
  CHECK(readable(b.network_fd(), 5000));
  b.drain();
  // A message right after another one sends none (b cannot be in a sleep that only a wake-up
  // ends), and a request still in flight none within kRemoteRewakeEvery of the last datagram.
  // "Right after" is up to the machine's scheduler: of a few tries, one is quick enough.
  bool quiet_after_message = false, quiet_after_rewake = false;
  for (int attempt = 0; attempt < 20 && !(quiet_after_message && quiet_after_rewake); ++attempt) {
    usleep(static_cast<useconds_t>(WakeBoard::kRemoteSleepAfter.count()));
    a.wake(1);  // quiet for longer than half the promise: always a datagram
    REQUIRE(readable(b.network_fd(), 5000));
    b.drain();
    a.wake(1);
    quiet_after_message = quiet_after_message || !readable(b.network_fd(), 0);
    a.rewake(1);
    quiet_after_rewake = quiet_after_rewake || !readable(b.network_fd(), 0);
    b.drain();
  }
  CHECK(quiet_after_message);
  CHECK(quiet_after_rewake);
}

TEST_CASE("a crowded rank on another host is sent a datagram with every message", "[runtime][wake]") {
  // Rank 1's kernel runs more ranks than it has cores (set_crowded): it sleeps until woken
  // right after progress, so no message to it may go without a datagram.
  RemoteRanks ranks(13);
  auto& a = ranks.a;
  auto& b = ranks.b;
  ranks.connect();
  a.set_crowded({false, true});
  b.set_crowded({false, true});
  CHECK_FALSE(a.crowded());
  CHECK(b.crowded());
  for (int message = 0; message < 5; ++message) {
    a.wake(1);  // back to back: each one sends its datagram
    REQUIRE(readable(b.network_fd(), 5000));
    b.drain();
  }
}
