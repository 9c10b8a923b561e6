#pragma once
// The MPI poller's one policy: what a rank's poll driver does after a turn (poll again, give
// up the core and poll, sleep on a timer, or sleep until a peer wakes it) and what its sleep
// tells its peers on the wake board. Pure: no clock, no MPI; the driver passes what it knows.
// docs/mpi-poll-policy.md has the measurements behind each rule.
#include <taskwire/runtime/config.hpp>
#include <taskwire/comm/mpi/mpi_wake.hpp>

#include <chrono>
#include <cstdint>
#include <functional>

namespace taskwire::comm::mpi {

struct PollPolicy {
  /// Keep polling this long after progress (0 when the host has fewer cores than ranks).
  std::chrono::microseconds spin_after_progress{0};
  /// Then poll and yield this long after progress, while the host has a free core
  /// (MpiPollConfig's default: one value, documented there).
  std::chrono::microseconds yield_after_progress{runtime::MpiPollConfig{}.yield_after_progress};
  /// Timed sleep while sends are in flight; the backoff's longest sleep without wake-ups
  /// (before deep_idle_after).
  std::chrono::microseconds sleep_cap{1000};
  /// Longest sleep while receives are in flight (they move with this rank's own MPI calls),
  /// or sends when no peer can wake this rank to complete them.
  std::chrono::microseconds in_flight_sleep_cap{50};
  /// Without wake-ups, after deep_idle_after of silence the sleep grows to this.
  std::chrono::microseconds deep_sleep{3000};
  std::chrono::milliseconds deep_idle_after{1000};
  /// Bound of a sleep that waits for a wake-up (it only covers a lost one).
  std::chrono::milliseconds wakeable_sleep{50};
  /// With peers on other hosts, how long without progress before such a sleep (the promise
  /// their senders rely on, WakeBoard).
  std::chrono::microseconds remote_sleep_after = WakeBoard::kRemoteSleepAfter;

  /// From the configuration; `spin_after_progress` -1 resolves to 0 when `oversubscribed`
  /// (more ranks on this machine's kernel than cores, and every peer can wake this rank),
  /// else 100 us. Oversubscribed with `remote_peers` (emulated hosts, containers), its
  /// senders on other hosts send a datagram with every message (WakeBoard): it
  /// sleeps until woken right after progress, without a yield window.
  static PollPolicy from(const runtime::MpiPollConfig& config, bool oversubscribed,
                         bool remote_peers = false);
};

/// What the driver knows after a turn.
struct PollView {
  std::chrono::steady_clock::duration since_progress{};
  bool receiving = false;      ///< receives in flight
  bool sending = false;        ///< sends in flight
  bool sends_blocked = false;  ///< a message waits behind a send in flight
  bool wakeable = false;       ///< every peer can wake this rank (WakeBoard)
  bool remote_peers = false;   ///< some of them only by datagram, from another host
  bool sending_remote = false;  ///< sends in flight to another host
};

struct PollDecision {
  enum class Action { poll, yield_then_poll, sleep, sleep_until_woken };
  Action action = Action::poll;
  std::chrono::microseconds wait{0};  ///< sleep: the timer; sleep_until_woken: its bound
  std::uint32_t word = WakeBoard::kSleeping;  ///< what a sleep publishes
};

/// `core_free` is asked only inside the yield window; `backoff` (the idle backoff's next
/// wait, which advances it) only when no rule before it applies.
PollDecision decide(const PollPolicy& policy, const PollView& view,
                    const std::function<bool()>& core_free,
                    const std::function<std::chrono::microseconds()>& backoff);

}  // namespace taskwire::comm::mpi
