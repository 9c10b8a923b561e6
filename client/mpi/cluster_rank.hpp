#pragma once
// One rank's part in a cluster launched under mpiexec (see launch.hpp): the scheduler, a
// worker, the client, or (pool mode) the scheduler and the client in one process.
// start() and the end of a cluster are collective: every rank of the job takes part.
#include <taskwire/client/mpi/launch.hpp>
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/runtime/context.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace taskwire::scheduler {
class SchedulerServer;
}
namespace taskwire::worker {
class Worker;
}

namespace taskwire::mpi::detail {

class ClusterRank {
 public:
  /// Throws std::invalid_argument for a layout that does not fit the job.
  ClusterRank(runtime::MpiEnvironment& env, LaunchOptions options, Layout layout);
  ~ClusterRank();  ///< stops whatever still runs here
  ClusterRank(const ClusterRank&) = delete;
  ClusterRank& operator=(const ClusterRank&) = delete;

  /// Collective. The scheduler rank starts listening and tells every rank its address;
  /// workers start and register; once the scheduler has seen them all (or the connect
  /// timeout passed), the client rank connects.
  void start();

  bool is_client() const noexcept { return env_.rank() == layout_.client_rank; }
  Client& client() { return *client_; }
  const std::string& scheduler_address() const noexcept { return scheduler_address_; }
  int worker_count() const noexcept;

  /// Client rank: shuts the cluster down (scheduler and workers exit their roles), waits for
  /// an embedded scheduler, stops everything here. Returns 0. Idempotent.
  int finish_client();
  /// Other ranks: serve until the client shuts the cluster down (or SIGINT/SIGTERM), then
  /// stop. Returns 0 after a clean shutdown, 1 otherwise.
  int serve();

 private:
  bool is_scheduler() const noexcept { return env_.rank() == layout_.scheduler_rank; }
  std::string listen_address() const;
  void start_scheduler();
  void wait_for_workers();
  int serve_scheduler();
  int serve_worker();
  void watch_peers();
  std::string role_of(int rank) const;

  runtime::MpiEnvironment& env_;
  LaunchOptions options_;
  Layout layout_;
  std::unique_ptr<runtime::Context> context_;
  std::unique_ptr<comm::Registry> registry_;
  std::unique_ptr<scheduler::SchedulerServer> scheduler_;
  std::unique_ptr<worker::Worker> worker_;
  std::optional<Client> client_;
  std::string scheduler_address_;  // on the launch's transport
  std::string inproc_address_;     // pool mode: where the embedded client connects
  bool finished_ = false;
  bool keep_context_ = false;  // the program's futures outlive the cluster (see the destructor)
  std::atomic<bool> stop_watch_{false};
  std::thread watchdog_;  // ends the job when a rank dies (MPI cannot go on without it)
};

}  // namespace taskwire::mpi::detail
