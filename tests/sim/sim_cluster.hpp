#pragma once
// A whole cluster in one process, deterministic by seed: the real scheduler and worker state
// machines behind simulated servers (sim_scheduler, sim_worker), a simulated client, a
// network with random delays (FIFO per channel) and a fault injector, on a simulated clock.
// Both state machines' validate() run after every event; the client checks every value and
// error; at quiescence every wanted key must be settled, and once everything is released
// nothing may be left on the scheduler or the workers.
#include "sim_client.hpp"
#include "sim_network.hpp"
#include "sim_random.hpp"
#include "sim_scheduler.hpp"
#include "sim_worker.hpp"

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace taskwire::sim {

struct SimConfig {
  std::uint64_t seed = 1;
  /// Events (items delivered) after which no new graph is submitted and faults stop; the
  /// run then drains. A run with `graphs` submitted may end sooner.
  std::size_t max_events = 20'000;
  int graphs = 4;          ///< graphs submitted; 0: keep submitting until max_events
  bool faults = true;
  double task_fail_rate = 0.05;  ///< chance that one run of a task fails (it is retried)
  double fault_interval = 0.4;   ///< mean simulated seconds between faults
  int max_workers = 6;
  /// Among the faults, spill files lost under a worker (deleted: every value it had on disk
  /// is then lost there). Off replays the seeds found before it existed as they ran.
  bool spill_losses = true;
  /// A worker the scheduler dropped (missing heartbeats) joins again under its name with
  /// the results it kept. Off replays the seeds found before it existed as they ran.
  bool rejoin_with_data = true;
  /// Half the retirements are graceful (the worker's lifetime ends: RetireWorker, its data
  /// copied elsewhere, then closed) instead of a clean close that loses its data. Off replays
  /// the seeds found before it existed as they ran.
  bool graceful_retirements = false;
  bool trace_all = false;        ///< print every trace line to stderr as it happens
  /// Before this event, print the scheduler's view of every submitted task (diagnosis).
  std::size_t dump_at = 0;
  std::size_t trace_tail = 150;  ///< lines kept for a failure's report
};

struct SimStats {
  std::size_t events = 0;            ///< items delivered
  std::size_t scheduler_events = 0;  ///< SchedulerState::handle calls
  std::size_t worker_events = 0;     ///< WorkerState::handle calls
  std::size_t graphs = 0, keys_in_memory = 0, keys_erred = 0, keys_lost = 0;
  std::size_t executions = 0, injected_failures = 0;
  std::size_t crashes = 0, retirements = 0, joins = 0, refusals = 0, pauses = 0, stalls = 0;
  std::size_t spill_losses = 0;  ///< values whose spill file the injector deleted
  std::size_t rejoins = 0;       ///< workers dropped by the scheduler that joined again
  std::size_t steal_requests = 0, steals = 0, missing_data = 0, gather_failures = 0;
  /// Waiting get_data (inputs still running on the peer asked) and those answered with data.
  std::size_t awaited_asked = 0, awaited_received = 0;
  std::size_t removed_by_heartbeat = 0;
  std::size_t drains = 0;          ///< graceful retirements asked for
  std::size_t drains_closed = 0;   ///< of those, workers the scheduler closed as retired
  std::size_t replicas_added = 0;  ///< copies the workers reported held (add_keys)
  /// Retirements the client asked for (RetireWorkers, a quarter of the graceful ones), those
  /// answered, and the workers in the answers that were not retired.
  std::size_t client_retirements = 0, client_retirements_answered = 0;
  std::size_t client_retirements_given_up = 0;
  double sim_seconds = 0;
  SimStats& operator+=(const SimStats& o);
};

struct SimResult {
  bool ok = true;
  std::string failure;  ///< what went wrong, with the seed
  std::string trace;    ///< the last trace lines before it
  SimStats stats;
};

/// A broken invariant, a wrong value or a hang; carries the message for SimResult.
struct SimFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Cluster {
 public:
  explicit Cluster(const SimConfig& config);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  SimResult run();

  // ---- for the simulated processes ----
  Network& net() { return net_; }
  Rng& rng() { return rng_; }
  const SimConfig& config() const { return config_; }
  SimStats& stats() { return stats_; }
  /// A message's latency: mostly short, now and then slow.
  double latency();
  void trace(const std::string& line);
  [[noreturn]] void fail(const std::string& what);
  SimWorker* live_worker(const std::string& address);
  SimScheduler& scheduler() { return *scheduler_; }
  void note_injected_failure(const std::string& key) { ++injected_[key]; }
  std::size_t injected_failures(const std::string& key) const;
  /// The worker process ends: it crashed (its unsent messages may be lost, a nanny may
  /// report it), or closed (`expected`: it said goodbye). `refused`: the scheduler had
  /// already dropped its connection.
  void worker_exits(SimWorker& w, bool crashed, bool expected, const std::string& reason);
  /// A worker whose name was refused: a nanny tries again later.
  void refused(SimWorker& w);
  /// A worker the scheduler closed joins again a little later, under its name, with its data.
  void rejoin_keeping_data(SimWorker& w);

 private:
  enum class Phase { running, releasing };
  void dispatch(const Envelope& e);
  void to_cluster(const Payload& p);
  SimWorker& add_worker(std::string name);
  void schedule_join(std::string name, double delay);
  bool name_in_use(const std::string& name) const;
  void submit_next();
  // faults (sim_faults.cpp)
  void fault();
  void crash_random_worker();
  void retire_random_worker();
  void pause_random_worker();
  void stall_random_channel();
  void lose_random_spill_files();
  SimWorker* random_worker();
  // checks at quiescence (sim_faults.cpp)
  void check_quiet_machines();
  void check_empty();
  void dump_state();

  SimConfig config_;
  Rng rng_;
  Rng graph_rng_;
  Network net_;
  /// The workers' spill directories live under it; removed with the cluster.
  std::filesystem::path spill_root_;
  std::unique_ptr<SimScheduler> scheduler_;
  SimClient client_;
  std::map<std::string, std::unique_ptr<SimWorker>> workers_;  ///< live, by address
  std::vector<std::unique_ptr<SimWorker>> graveyard_;  ///< exited during this delivery
  std::set<std::string> dead_;
  std::vector<std::string> dead_names_;
  std::map<std::string, std::size_t> injected_;
  std::map<std::string, std::shared_ptr<worker::DataStore>> kept_;  ///< by name, to rejoin
  std::size_t pending_joins_ = 0;
  int next_worker_ = 0;
  int next_graph_ = 0;
  Phase phase_ = Phase::running;
  SimStats stats_;
  std::deque<std::string> trace_;
};

/// Runs one seed; never throws for a failure of the system under test (see SimResult).
SimResult run_simulation(const SimConfig& config);

}  // namespace taskwire::sim
