#pragma once
// What the parts of the scheduler server share on its strand: the state machine, the peers,
// the task specs, the sender of the state machine's instructions, the clock and whether a
// shutdown began. The server (scheduler_server.cpp) owns it; the operation handlers
// (worker_op_handler.hpp, client_op_handler.hpp) borrow it. Not installed API.
#include <taskwire/scheduler/instruction_sender.hpp>
#include <taskwire/scheduler/peer_links.hpp>
#include <taskwire/scheduler/scheduler_state.hpp>
#include <taskwire/scheduler/task_spec_store.hpp>

#include <chrono>
#include <utility>

namespace taskwire::scheduler {

struct ServerCore {
  explicit ServerCore(const SchedulerOptions& options) : state(options) {}
  ServerCore(const ServerCore&) = delete;
  ServerCore& operator=(const ServerCore&) = delete;

  /// Runs `event` through the state machine and batches the instructions it gives.
  template <class E>
  void handle(E event) {
    sender.send(state.handle(Event(std::move(event))));
  }
  /// Seconds since the server started: the state machine's clock.
  double now() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }

  SchedulerState state;
  PeerLinks peers;
  TaskSpecStore specs;
  InstructionSender sender{peers, specs, state};
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  bool stopping = false;  ///< a shutdown began: no new work, no new workers
};

}  // namespace taskwire::scheduler
