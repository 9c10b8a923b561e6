// comm::mpi::decide (mpi_poll_policy.hpp): the MPI poll driver's policy, without MPI.
#include <taskwire/comm/mpi/mpi_poll_policy.hpp>

#include <catch2/catch.hpp>

namespace {

using namespace std::chrono_literals;
using taskwire::comm::mpi::decide;
using taskwire::comm::mpi::PollDecision;
using taskwire::comm::mpi::PollPolicy;
using taskwire::comm::mpi::PollView;
using taskwire::comm::mpi::WakeBoard;
using Action = PollDecision::Action;

struct Probe {
  bool free_core = false;
  int core_checks = 0, backoffs = 0;
  std::chrono::microseconds next{8};
  PollDecision operator()(const PollPolicy& p, const PollView& v) {
    return decide(p, v, [this] { ++core_checks; return free_core; },
                  [this] { ++backoffs; return next; });
  }
};

PollPolicy oversubscribed() {
  taskwire::runtime::MpiPollConfig c;  // spin_after_progress -1: automatic
  return PollPolicy::from(c, true);
}

}  // namespace

TEST_CASE("poll policy: spin after progress only with a core per rank", "[mpi][policy]") {
  taskwire::runtime::MpiPollConfig c;
  CHECK(PollPolicy::from(c, false).spin_after_progress == 100us);
  CHECK(PollPolicy::from(c, true).spin_after_progress == 0us);
  c.spin_after_progress = 7us;
  CHECK(PollPolicy::from(c, true).spin_after_progress == 7us);

  Probe probe;
  const auto p = PollPolicy::from(taskwire::runtime::MpiPollConfig{}, false);
  auto d = probe(p, PollView{50us, false, false, false, true});
  CHECK(d.action == Action::poll);
  CHECK(probe.core_checks == 0);
  CHECK(probe.backoffs == 0);  // the backoff does not advance while polling
}

TEST_CASE("poll policy: yield while a core is free, else sleep", "[mpi][policy]") {
  Probe probe;
  const auto p = oversubscribed();
  const auto inside = p.yield_after_progress / 2;  // after progress, within the yield window
  probe.free_core = true;
  CHECK(probe(p, PollView{inside, false, false, false, true}).action == Action::yield_then_poll);
  probe.free_core = false;
  CHECK(probe(p, PollView{inside, false, false, false, true}).action == Action::sleep_until_woken);
  // Past the yield window the core is not even looked at.
  probe.core_checks = 0;
  CHECK(probe(p, PollView{p.yield_after_progress + 1us, false, false, false, true}).action ==
        Action::sleep_until_woken);
  CHECK(probe.core_checks == 0);
}

TEST_CASE("poll policy: receives in flight poll soon, sends in flight sleep on a timer",
          "[mpi][policy]") {
  Probe probe;
  const auto p = oversubscribed();
  const auto late = p.yield_after_progress + 1us;

  probe.next = 5us;  // early in the backoff: its wait
  auto d = probe(p, PollView{late, true, true, true, true});
  CHECK(d.action == Action::sleep);
  CHECK(d.wait == 5us);
  probe.next = 900us;  // late in the backoff: capped
  d = probe(p, PollView{late, true, false, false, true});
  CHECK(d.wait == p.in_flight_sleep_cap);

  d = probe(p, PollView{late, false, true, false, true});  // sends only: a timed sleep
  CHECK(d.action == Action::sleep);
  CHECK(d.wait == p.sleep_cap);
  CHECK(d.word == WakeBoard::kSleeping);
  d = probe(p, PollView{late, false, true, true, true});  // a message waits behind one
  CHECK(d.action == Action::sleep);
  CHECK(d.word == WakeBoard::kAwaitingSends);
}

TEST_CASE("poll policy: idle, a rank every peer can wake sleeps until woken", "[mpi][policy]") {
  Probe probe;
  const auto p = oversubscribed();
  const auto late = p.yield_after_progress + 1us;
  auto d = probe(p, PollView{late, false, false, false, true});
  CHECK(d.action == Action::sleep_until_woken);
  CHECK(d.wait == p.wakeable_sleep);
  CHECK(d.word == WakeBoard::kSleeping);

  probe.next = 16us;  // no wake-ups (a peer on another host): the backoff, longer when silent
  d = probe(p, PollView{late, false, false, false, false});
  CHECK(d.action == Action::sleep);
  CHECK(d.wait == 16us);
  d = probe(p, PollView{p.deep_idle_after, false, false, false, false});
  CHECK(d.wait == p.deep_sleep);
  probe.next = 900us;
  d = probe(p, PollView{late, false, true, false, false});  // sends in flight, no wake-ups
  CHECK(d.wait == p.in_flight_sleep_cap);
}

TEST_CASE("poll policy: with peers on other hosts, sleeps are timed until the senders' promise holds",
          "[mpi][policy]") {
  Probe probe;
  const auto p = oversubscribed();
  // {since_progress, receiving, sending, sends_blocked, wakeable, remote_peers, sending_remote}
  const auto early = p.remote_sleep_after - 1us;
  auto d = probe(p, PollView{early, false, false, false, true, true, false});
  CHECK(d.action == Action::sleep);  // a sender on another host may send without a datagram
  CHECK(d.wait == probe.next);       // the backoff's wait
  d = probe(p, PollView{p.remote_sleep_after, false, false, false, true, true, false});
  CHECK(d.action == Action::sleep_until_woken);  // from now on every sender sends one
  // Without peers on other hosts the same moment already sleeps until woken.
  CHECK(probe(p, PollView{early, false, false, false, true, false, false}).action ==
        Action::sleep_until_woken);
  // The senders' half: they keep quiet for less than half of it.
  CHECK(2 * (WakeBoard::kRemoteSleepAfter / 2) <= p.remote_sleep_after);
}

TEST_CASE("poll policy: a send in flight to another host polls soon, as a receive does",
          "[mpi][policy]") {
  Probe probe;
  probe.next = 5000us;
  const auto p = oversubscribed();
  auto d = probe(p, PollView{1s, false, true, true, true, true, true});
  CHECK(d.action == Action::sleep);
  CHECK(d.wait == p.in_flight_sleep_cap);
  d = probe(p, PollView{1s, false, true, true, true, true, false});  // to this host only
  CHECK(d.action == Action::sleep);
  CHECK(d.wait == p.sleep_cap);
}

TEST_CASE("poll policy: oversubscribed with peers on other hosts, sleep until woken at once",
          "[mpi][policy]") {
  const taskwire::runtime::MpiPollConfig c;
  const auto p = PollPolicy::from(c, true, true);
  CHECK(p.spin_after_progress == 0us);
  CHECK(p.yield_after_progress == 0us);
  CHECK(p.remote_sleep_after == 0us);
  Probe probe;
  probe.free_core = true;  // a free core does not matter: its peers wake it by datagram
  // {since_progress, receiving, sending, sends_blocked, wakeable, remote_peers, sending_remote}
  CHECK(probe(p, PollView{1us, false, false, false, true, true, false}).action ==
        Action::sleep_until_woken);
  // Data in flight still moves only with its own MPI calls: timed sleeps then.
  CHECK(probe(p, PollView{1us, true, false, false, true, true, false}).action == Action::sleep);
  // With a core per rank, or no peer on another host, the windows stay.
  CHECK(PollPolicy::from(c, false, true).remote_sleep_after == WakeBoard::kRemoteSleepAfter);
  CHECK(PollPolicy::from(c, true, false).yield_after_progress == c.yield_after_progress);
}
