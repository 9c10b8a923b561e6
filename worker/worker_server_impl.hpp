#pragma once
// Worker::Impl: the worker server as a composition of its parts over one WorkerCore (state
// machine, data store, options, strand): the scheduler link, the task runner, the peer
// fetcher, the data server, the memory monitor and the dashboard. It owns the lifecycle
// (start, the close in order, the status waited on) and the one handler that runs events
// through the state machine and hands each instruction to the part that carries it out.
// Not installed API: include worker_server.hpp.
#include <taskwire/worker/dashboard_service.hpp>
#include <taskwire/worker/data_server.hpp>
#include <taskwire/worker/memory_monitor.hpp>
#include <taskwire/worker/peer_fetcher.hpp>
#include <taskwire/worker/scheduler_link.hpp>
#include <taskwire/worker/task_runner.hpp>
#include <taskwire/worker/worker_core.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace taskwire::worker {

class Worker::Impl : public std::enable_shared_from_this<Worker::Impl>, private WorkerActions {
 public:
  /// The Impl, owned: its parts' handlers hold it through WorkerCore::owner.
  static std::shared_ptr<Impl> create(runtime::Context& context, comm::Registry& registry,
                                      WorkerOptions options, std::shared_ptr<KeptData> kept);
  Impl(runtime::Context& context, comm::Registry& registry, WorkerOptions options,
       std::shared_ptr<KeptData> kept);
  ~Impl();  ///< removes the spill directory, unless keep_data() took it
  std::shared_ptr<KeptData> keep_data();

  void start();
  void request_stop();
  void join_executor() { tasks_.join(); }
  bool wait_closed(std::chrono::milliseconds timeout);
  CloseStatus close_status() const;
  std::string address() const { return core_.address; }
  std::string name() const { return core_.name; }
  const DataStore& data() const { return *core_.data; }
  std::string dashboard_url() const { return dashboard_.url(); }

 private:
  /// start()'s listeners: at the listen address (by default on the scheduler's scheme, as
  /// it is reached), then the extra ones. Returns the host to advertise (tcp://, tls://).
  std::string listen();
  void on_started();
  void handle(std::vector<Event> events) override;
  void run(Instructions instructions);
  /// Closes everything, once; the status says closed once finish_close() ran.
  void begin_close(std::string reason, bool clean) override;
  void finish_close(std::string reason, bool clean);
  /// WorkerOptions::retire_at: asks the scheduler to retire this worker, then bounds the wait.
  void start_lifetime();
  void on_lifetime_over();

  // Declared in the order they are made; each part borrows those above it.
  WorkerCore core_;
  DashboardService dashboard_;
  SchedulerLink link_;
  TaskRunner tasks_;
  PeerFetcher fetcher_;
  DataServer server_;
  MemoryMonitor memory_;
  asio::steady_timer lifetime_timer_;  ///< WorkerOptions::retire_at, then retire_grace
  /// WorkerOptions::extra_listen_addresses' contact addresses, told to the scheduler.
  std::vector<std::string> other_addresses_;
  std::atomic<bool> started_{false};  ///< start() got past its checks
  bool closed_ = false;               ///< on the strand: finish_close() ran

  mutable std::mutex status_mu_;
  std::condition_variable status_cv_;
  CloseStatus status_;
};

}  // namespace taskwire::worker
