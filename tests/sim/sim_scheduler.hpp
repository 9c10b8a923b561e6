#pragma once
// The simulated scheduler process: plays scheduler_server.cpp's part around a real
// SchedulerState. Each operation of an incoming batch is one event (as the server's
// for_each_op); the instructions go out as one batch per peer once the batch is handled.
// It keeps the task payloads the state machine refers to (SpecRef), drops them on
// DropTaskSpec, and forwards a result sent inline with task_finished to the client.
#include "sim_network.hpp"

#include <taskwire/scheduler/scheduler_state.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskwire::sim {

class Cluster;

class SimScheduler {
 public:
  SimScheduler(Cluster& cluster, scheduler::SchedulerOptions options, double heartbeat_timeout);

  /// Starts the heartbeat check timer.
  void start();
  void receive(const Envelope& e);

  const scheduler::SchedulerState& state() const { return state_; }
  /// Workers with an open connection (registered, not refused, not closed).
  const std::set<std::string>& connected() const { return connected_; }
  std::size_t held_specs() const { return specs_.size(); }

 private:
  struct StoredSpec {
    std::vector<protocol::ArgSpec> args;
    std::vector<std::string> dependencies;
    int retries = 0;
    std::vector<Frame> frames;
  };

  void on_op(const std::string& from, const Payload& op);
  /// False when `op` is not a worker's (or a nanny's) operation.
  bool on_worker_op(const std::string& from, const Payload& op);
  void on_update_graph(const OpUpdateGraph& g);
  void handle(scheduler::Event event);
  std::string story_of_first_key(const std::string& problem) const;
  void emit(const scheduler::Instruction& i);
  void emit_compute(const scheduler::ComputeTask& ct);
  void emit_log(const scheduler::LogEvent& l);
  void to_peer(const std::string& peer, Payload op);
  void flush();

  Cluster& cluster_;
  scheduler::SchedulerState state_;
  double heartbeat_timeout_;
  std::unordered_map<scheduler::SpecRef, StoredSpec> specs_;
  scheduler::SpecRef next_spec_ = 0;
  std::set<std::string> connected_;
  std::map<std::string, std::vector<Payload>> out_;  ///< the batch being built, per peer
  std::optional<std::pair<std::string, Frame>> inline_result_;
};

}  // namespace taskwire::sim
