#pragma once
// taskwire::http::TaskStream: the last `capacity` task runs and transfers a daemon saw, for
// the dashboard's task stream (/json/...). A ring: once full, an entry's strings are
// overwritten in place (their capacity reused), so recording allocates nothing in the
// steady state. Each entry gets a lane: the thread that ran it, or for a task that ran on
// its worker's event loop (inline), a thread slot of its worker that was free when it started,
// reconstructed from start and stop times. Not thread-safe: one strand records and reads it.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::http {

/// The most entries one poll of /json/dashboard returns; the page polls once a second.
inline constexpr std::size_t kStreamEntriesPerPoll = 2000;

/// How many task runs a second a task stream records: kStreamEntriesPerPoll, what the page
/// takes in its one poll a second. Entries past that rate would be overwritten unseen, and
/// recording them costs the daemon's strand, 5-6 % of the scheduler's throughput on short
/// tasks (docs/dashboard.md). Past the rate the stream is a sample; the counts count all.
/// Errors and runs whose dependencies came from peers are always shown: the rule of both the
/// scheduler's and the workers' streams.
class StreamRate {
 public:
  /// Whether one more run finishing at `now` (seconds) is recorded; counts the ones left out.
  /// `always_shown` (an error, or a run whose dependencies came from peers): admitted
  /// whatever the rate, and not counted in it.
  bool admits(double now, bool always_shown = false) noexcept {
    if (always_shown) return true;
    if (now - window_start_ >= 1.0) {
      window_start_ = now;
      window_entries_ = 0;
    }
    if (window_entries_ == kStreamEntriesPerPoll) {
      ++unrecorded_;
      return false;
    }
    ++window_entries_;
    return true;
  }
  /// Runs admits() left out.
  std::uint64_t unrecorded() const noexcept { return unrecorded_; }

 private:
  double window_start_ = -1.0;  ///< the second admits() counts in
  std::size_t window_entries_ = 0;
  std::uint64_t unrecorded_ = 0;
};

struct TaskStreamEntry {
  std::uint64_t seq = 0;  ///< 1, 2, ... in recording order
  std::string key;
  std::string function;  ///< "transfer" for a transfer
  std::string worker;    ///< who ran it; for a transfer, the peer it came from
  int lane = 0;          ///< thread slot of its worker (transfers: 0)
  double start = 0, stop = 0;  ///< seconds since the daemon started
  /// A transfer's duration (also stop - start); a task's: the span of the transfers that
  /// brought its dependencies (0: none came from a peer).
  double transfer_seconds = 0;
  std::int64_t nbytes = 0;
  bool erred = false;
  bool transfer = false;
};

/// One task run, as a daemon learnt of it.
struct TaskRecord {
  std::string_view key, function, worker;
  int nthreads = 1;
  int thread = -1;  ///< the pool thread that ran it, when its worker said (else a lane is guessed)
  double start = 0, stop = 0;
  double transfer_seconds = 0;  ///< spent fetching its dependencies from peers
  std::int64_t nbytes = 0;
  bool erred = false;
};

class TaskStream {
 public:
  explicit TaskStream(std::size_t capacity = 5000) : capacity_(capacity) {}

  /// Records a task run on its worker (of `nthreads` threads) from start to stop.
  void record_task(const TaskRecord& task);
  void record_transfer(std::string_view key, std::string_view peer, double start, double stop,
                       std::int64_t nbytes);
  /// Forgets the lanes of a worker that left.
  void forget_worker(const std::string& worker) { lanes_.erase(worker); }
  /// Entries with seq > `after`, oldest first, at most `limit` (the newest ones).
  std::vector<TaskStreamEntry> since(std::uint64_t after,
                                     std::size_t limit = kStreamEntriesPerPoll) const;
  std::uint64_t last_seq() const noexcept { return next_seq_ - 1; }

 private:
  TaskStreamEntry& next_slot();
  int lane_for(std::string_view worker, int nthreads, double start, double stop);

  std::size_t capacity_;
  std::vector<TaskStreamEntry> ring_;
  std::size_t oldest_ = 0;  ///< once full
  std::uint64_t next_seq_ = 1;
  std::map<std::string, std::vector<double>, std::less<>> lanes_;  ///< per worker: lane ends
};

}  // namespace taskwire::http
