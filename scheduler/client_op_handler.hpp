#pragma once
// The operations clients send the scheduler: graphs (their specs kept in the TaskSpecStore),
// releases, cancels, retirement and rebalance requests as the state machine's events, the
// scheduler_info answer, and a shutdown request handed to the server. On the scheduler's
// strand only. Not installed API.
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/runtime/batch.hpp>
#include <taskwire/scheduler/server_core.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace taskwire::scheduler {

class ClientOpHandler {
 public:
  /// Called for a client's shutdown request (its peer asked).
  using ShutdownRequest = std::function<void(const PeerPtr&)>;
  /// `listeners` are the server's (their contact addresses go into scheduler_info).
  ClientOpHandler(ServerCore& core, const std::vector<std::unique_ptr<comm::Listener>>& listeners,
                  ShutdownRequest on_shutdown);

  /// False when `r` is not an operation of clients; makes `p` a client when it is one.
  /// Throws std::runtime_error when a worker sends it or it is malformed.
  bool handle(const PeerPtr& p, runtime::OpReader& r);

 private:
  void on_update_graph(const PeerPtr& p, protocol::UpdateGraph g,
                       std::span<const runtime::Frame> frames);
  /// The answer to scheduler_info: the state machine's view of workers and tasks, with what
  /// only the server knows (listen addresses, clients, the workers' own reports).
  protocol::SchedulerInfo describe_cluster(const Peer& asking, std::uint64_t request_id) const;

  ServerCore& core_;
  const std::vector<std::unique_ptr<comm::Listener>>& listeners_;
  ShutdownRequest on_shutdown_;
};

}  // namespace taskwire::scheduler
