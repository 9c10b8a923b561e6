// runtime::WakeBoard (mpi_wake.hpp) without MPI: two boards in this process stand for two
// ranks on one host (keys other than the pid keep them apart from the process's own).
#include <taskwire/runtime/mpi_wake.hpp>

#include <catch2/catch.hpp>

#include <poll.h>
#include <unistd.h>

namespace {

using taskwire::runtime::WakeBoard;

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
