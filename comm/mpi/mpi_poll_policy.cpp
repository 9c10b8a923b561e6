#include <taskwire/comm/mpi/mpi_poll_policy.hpp>

#include <algorithm>

namespace taskwire::comm::mpi {

PollPolicy PollPolicy::from(const runtime::MpiPollConfig& config, bool oversubscribed,
                            bool remote_peers) {
  PollPolicy p;
  p.spin_after_progress = config.spin_after_progress.count() >= 0
                              ? config.spin_after_progress
                              : std::chrono::microseconds(oversubscribed ? 0 : 100);
  p.yield_after_progress = config.yield_after_progress;
  p.sleep_cap = std::max(config.sleep_cap, std::chrono::microseconds(1));
  p.deep_sleep = 3 * p.sleep_cap;
  if (oversubscribed && remote_peers) {
    p.yield_after_progress = {};
    p.remote_sleep_after = {};
  }
  return p;
}

PollDecision decide(const PollPolicy& policy, const PollView& view,
                    const std::function<bool()>& core_free,
                    const std::function<std::chrono::microseconds()>& backoff) {
  using Action = PollDecision::Action;
  // Right after progress a reply is likely soon; with a core per rank, keep polling.
  if (view.since_progress < policy.spin_after_progress) return {Action::poll};
  // Oversubscribed, polling takes the core the next hop's rank needs, but while a core is
  // free, poll and yield: a chain of tasks, where only two ranks run, needs no wake-ups.
  if (view.since_progress < policy.yield_after_progress && core_free())
    return {Action::yield_then_poll};
  auto wait = backoff();
  // A receive in flight moves with this rank's own MPI calls (a rendezvous receive copies
  // the data itself), and so does a send when its receiver cannot wake this rank (over a
  // network the sender's MPI pushes the data out as the socket drains): poll again soon.
  if (view.receiving || view.sending_remote || (view.sending && !view.wakeable))
    return {Action::sleep, std::min(wait, policy.in_flight_sleep_cap)};
  if (view.wakeable && view.sending) {
    // A send in flight completes once its receiver took it: the receiver wakes this rank
    // if a message waits behind it (kAwaitingSends), else the send completes at the next
    // turn. The timer bounds a send that MPI held back, which leaves only when this rank
    // calls MPI again.
    return {Action::sleep, policy.sleep_cap,
            view.sends_blocked ? WakeBoard::kAwaitingSends : WakeBoard::kSleeping};
  }
  // Every peer can wake this rank when it sends to it: sleep until then. A sender on another
  // host sends a wake-up only to a peer it has not sent to lately: until then, timed sleeps.
  if (view.wakeable && !(view.remote_peers && view.since_progress < policy.remote_sleep_after))
    return {Action::sleep_until_woken, policy.wakeable_sleep};
  if (view.wakeable) return {Action::sleep, wait};
  // Without wake-ups, the backoff; after a long silence, longer sleeps (each timer wake-up
  // costs tens of microseconds of CPU).
  if (view.since_progress >= policy.deep_idle_after) wait = std::max(wait, policy.deep_sleep);
  return {Action::sleep, wait};
}

}  // namespace taskwire::comm::mpi
