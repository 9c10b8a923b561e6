#pragma once
// Client::scheduler_info(): the cluster as the scheduler sees it at one moment, after Dask's
// Client.scheduler_info(). A snapshot: it does not follow the cluster afterwards.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire {

struct WorkerInfo {
  std::string address;                       ///< its contact address, as it registered
  std::vector<std::string> other_addresses;  ///< more addresses serving its data (a tcp:// door)
  std::string name;
  std::string host;  ///< its machine's host name
  unsigned nthreads = 1;
  /// Resident memory of its process in bytes, as of its last heartbeat (0: not reported).
  /// Workers sharing a process (in-process clusters) each report the whole process's.
  std::uint64_t memory = 0;
  /// Tasks placed on it and not finished, as the scheduler counts them now: running + queued.
  std::size_t processing = 0;
  std::size_t running = 0;  ///< of those, running on its threads as of its last heartbeat
  std::size_t queued = 0;   ///< the rest: waiting there for a thread or for their inputs
  std::size_t keys_held = 0;      ///< results it holds
  std::uint64_t bytes_held = 0;   ///< their size, as reported
  double since_heartbeat_seconds = 0;  ///< since the scheduler last heard from it
  std::map<std::string, double> resources;       ///< what it offers (--resources)
  std::map<std::string, double> used_resources;  ///< held by the tasks placed on it
  /// Its memory is past the pause threshold: it starts no task, and gets none.
  bool paused = false;
  /// Retiring (its --lifetime ended): it takes no new task and leaves once its data is
  /// copied to other workers.
  bool retiring = false;
};

/// A task no connected worker can run (SubmitOptions::resources no worker has, or workers
/// naming none connected): it waits in "no-worker" until one joins.
struct UnrunnableTask {
  std::string key;
  std::string needs;  ///< e.g. "resources GPU=1"
};

struct SchedulerInfo {
  std::string address;  ///< where this client reached the scheduler (its scheme's listen address)
  std::vector<std::string> addresses;  ///< every address the scheduler listens on
  std::size_t clients = 0;             ///< connected clients, this one included
  /// Tasks the scheduler holds, per state ("released", "waiting", "no-worker", "queued",
  /// "processing", "memory", "erred"; every state present, 0 when none).
  std::map<std::string, std::size_t> tasks_by_state;
  std::vector<WorkerInfo> workers;  ///< sorted by address
  /// Tasks waiting for a worker that can run them, best priority first, at most 100 (the
  /// "no-worker" count has them all, and tasks waiting only for resources to free up).
  std::vector<UnrunnableTask> unrunnable;

  /// tasks_by_state[state], 0 for a state not listed.
  std::size_t tasks(std::string_view state) const {
    const auto it = tasks_by_state.find(std::string(state));
    return it == tasks_by_state.end() ? 0 : it->second;
  }
  std::size_t total_threads() const {
    std::size_t n = 0;
    for (const auto& w : workers) n += w.nthreads;
    return n;
  }
};

}  // namespace taskwire
