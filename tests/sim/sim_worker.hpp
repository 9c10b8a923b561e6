#pragma once
// A simulated worker process: plays worker_server.cpp's part around a real WorkerState.
// Scheduler batches become one handle() call; Execute runs the simulated function and
// reports after a random duration; GatherDep becomes a get_data request to the peer, whose
// reply (or loss) becomes GatherDepDone (GatherDepFailed); SendTask* go to the scheduler in
// one batch per handle(), with threads_busy as the server adds it.
#include "sim_network.hpp"

#include <taskwire/worker/worker_state.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace taskwire::sim {

class Cluster;

class SimWorker {
 public:
  /// `spill_directory`: where its data store spills (only when lose_spill_files asks).
  /// `kept`: the data store of the worker this one replaces (joining again after the
  /// scheduler dropped it), whose results it holds from the start.
  SimWorker(Cluster& cluster, worker::WorkerStateOptions options, bool nanny,
            const std::filesystem::path& spill_directory,
            std::shared_ptr<worker::DataStore> kept = nullptr);
  std::shared_ptr<worker::DataStore> data_store() const { return state_.data_store(); }

  /// Registers with the scheduler and starts heartbeating.
  void start();
  void receive(const Envelope& e);
  /// Memory pause (memory_monitor.cpp's update_pause): the state machine stops starting work
  /// and the scheduler is told.
  void set_paused(bool paused);
  /// Its lifetime is over: asks the scheduler to retire it (retire_worker).
  void retire();
  /// Spills up to `spill` more values, then deletes every file in its spill directory;
  /// returns how many values were on disk then (each now lost here).
  std::size_t lose_spill_files(int spill);

  const std::string& address() const { return state_.options().address; }
  const std::string& name() const { return state_.options().name; }
  bool nanny() const { return nanny_; }
  bool paused() const { return state_.paused(); }
  worker::WorkerState& state() { return state_; }
  const worker::WorkerState& state() const { return state_; }
  /// Keys on its threads now: what a nanny reports as running when the process dies.
  std::vector<std::string> running() const { return {running_.begin(), running_.end()}; }
  /// A get_data to `peer` awaits its reply.
  bool awaits(const std::string& peer) const {
    auto it = outstanding_.find(peer);
    return it != outstanding_.end() && !it->second.empty();
  }

 private:
  void from_scheduler(const Envelope& e);
  void from_peer(const Envelope& e);
  void handle(std::vector<worker::Event> events);
  void run(worker::Instructions& instructions);
  void execute(const worker::Execute& x);
  void gather(const worker::GatherDep& g);
  void serve(const std::string& peer, const OpGetData& get);
  void answer_parked();
  void peer_lost(const std::string& peer);
  void to_scheduler(Payload op);
  void flush();

  Cluster& cluster_;
  worker::WorkerState state_;
  bool nanny_;
  std::vector<Payload> outbox_;
  std::map<std::string, std::set<std::uint64_t>> outstanding_;  ///< peer -> get_data ids
  std::set<std::uint64_t> waits_;  ///< of those, the waiting ones
  /// Waiting get_data from peers, parked until the key is computed here (data_server.cpp).
  std::vector<std::pair<std::string, OpGetData>> parked_;
  std::uint64_t next_request_ = 0;
  std::set<std::string> running_;
  std::size_t reported_busy_ = 0;
  bool busy_asked_ = false;
};

}  // namespace taskwire::sim
