#pragma once
// The simulated network and clock. Batches on one (sender, receiver) channel arrive in the
// order sent (a comm is FIFO), each after a random delay; across channels anything goes.
// Local items (task completions, timers) have a due time and no order among themselves.
//
// next() is the event loop's choice: among the items that are due, one at random; when none
// is, the clock jumps to the earliest due time plus a random jitter, so that several become
// due at once and their order is the seed's.
#include "sim_messages.hpp"
#include "sim_random.hpp"

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskwire::sim {

struct Envelope {
  std::string from, to;  ///< endpoints: "scheduler", "client", a worker address, "nanny:<address>"
  double due = 0;
  bool local = false;  ///< a local item, not a message
  bool timer = false;  ///< a periodic timer: does not keep the run going by itself
  std::vector<Payload> ops;
};

class Network {
 public:
  explicit Network(double jitter) : jitter_(jitter) {}

  double now() const { return now_; }

  /// Sends a batch from `from` to `to`, to arrive `delay` seconds from now, and never before
  /// what was sent earlier on the same channel.
  void send(const std::string& from, const std::string& to, std::vector<Payload> ops,
            double delay);
  /// A local item for `to`, due in `delay` seconds.
  void post(const std::string& to, Payload p, double delay, bool timer = false);
  /// Holds everything on the channel (queued now or sent meanwhile) until `until`.
  void stall(const std::string& from, const std::string& to, double until);
  /// The process behind `endpoint` ended: its local items go and, when it crashed
  /// (`rng` given), each channel from it keeps a random prefix of what is not delivered yet
  /// (what its kernel got out).
  void cut_from(const std::string& endpoint, Rng* rng);

  /// The next item, or nothing when none is pending.
  std::optional<Envelope> next(Rng& rng);
  /// Something other than timers is pending.
  bool busy() const;
  /// Channels with something queued, for faults to pick from.
  std::vector<std::pair<std::string, std::string>> active_channels() const;
  std::size_t pending() const;

 private:
  struct Channel {
    std::deque<Envelope> queue;
    double last_due = 0;
    double stalled_until = 0;
  };
  std::optional<Envelope> take_due(Rng& rng);

  std::map<std::pair<std::string, std::string>, Channel> channels_;
  std::vector<Envelope> local_;
  double now_ = 0;
  double jitter_;
};

}  // namespace taskwire::sim
