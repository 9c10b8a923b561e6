#pragma once
// The operations workers (and nannies, and missing_data from clients) send the scheduler,
// checked against who sent them and turned into the state machine's events; the dashboard
// records finished and failed tasks on the way. On the scheduler's strand only. Not
// installed API.
#include <taskwire/runtime/batch.hpp>
#include <taskwire/scheduler/dashboard_service.hpp>
#include <taskwire/scheduler/server_core.hpp>

#include <string>

namespace taskwire::scheduler {

class WorkerOpHandler {
 public:
  WorkerOpHandler(ServerCore& core, DashboardService& dashboard);

  /// False when `r` is not an operation of workers or nannies. Throws std::runtime_error
  /// when the peer may not send it (a protocol error: the server closes that comm).
  bool handle(const PeerPtr& p, runtime::OpReader& r);

 private:
  void on_register_worker(const PeerPtr& p, const protocol::RegisterWorker& b);
  void on_task_finished(const PeerPtr& p, runtime::OpReader& r);
  void on_task_erred(const PeerPtr& p, protocol::TaskErred b);
  void on_missing_data(const PeerPtr& p, protocol::MissingData b);
  /// The worker `p` is; throws when it is none (`op` names what it sent).
  static std::string require_worker(const PeerPtr& p, const char* op);

  ServerCore& core_;
  DashboardService& dashboard_;
};

}  // namespace taskwire::scheduler
