#pragma once
// The scheduler server: the thin I/O shell around SchedulerState. It listens on one or more
// addresses (any mix of tcp://, mpi://, inproc://), turns each peer's batches into events,
// runs the state machine on one strand, and sends the resulting instructions batched per
// peer (one message per peer per incoming message). It keeps the tasks' payload frames
// (which it never deserializes) and hands them to workers with ComputeTask.
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/scheduler/dashboard_options.hpp>
#include <taskwire/scheduler/scheduler_state.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace taskwire::scheduler {

struct SchedulerServerOptions {
  std::vector<std::string> listen{"tcp://127.0.0.1:0"};  ///< addresses to listen on
  /// A worker silent for this long is removed and its work rescheduled.
  std::chrono::milliseconds heartbeat_timeout{10'000};
  std::chrono::milliseconds heartbeat_check_interval{1'000};
  /// How long stop() and the destructor wait for the server's strand to take the shutdown
  /// in hand (the strand may be busy with a large graph); past it they return and the
  /// shutdown still happens when the strand gets to it.
  std::chrono::milliseconds stop_timeout{5'000};
  SchedulerOptions state;
  /// The HTTP dashboard, /metrics and /json (off unless enabled).
  DashboardOptions dashboard;
};

class SchedulerServer {
 public:
  /// The registry's context must be started and outlive the server.
  SchedulerServer(comm::Registry& registry, SchedulerServerOptions options);
  ~SchedulerServer();
  SchedulerServer(const SchedulerServer&) = delete;
  SchedulerServer& operator=(const SchedulerServer&) = delete;

  /// Starts listening; throws comm::CommError if an address cannot be listened on, or
  /// boost::system::system_error if the dashboard cannot (not even on a free port).
  void start();
  /// Contact addresses, one per listen address, in order.
  std::vector<std::string> addresses() const;
  /// "http://HOST:PORT" of the dashboard once started; "" when it is off.
  std::string dashboard_url() const;
  /// Stops: closes every worker (close_worker), every client and the listeners. Idempotent.
  /// Not from the context's own threads. Waits at most options.stop_timeout for the strand
  /// to begin it; what it posted keeps the server's state alive until it ran, so the
  /// registry and its context must outlive that too.
  void stop();
  /// Retires `workers` (addresses or names) as a client's retire_workers does, with no
  /// answer: scheduler_info() shows them retiring, then gone, or running on when there was
  /// nowhere to copy their data (the log says why). For a job cluster in this process.
  void retire_workers(std::vector<std::string> workers);
  /// Becomes ready when a client asked for shutdown (or stop() was called) and the workers
  /// have been told to close.
  std::shared_future<void> finished() const { return finished_; }

  /// Runs `fn` on the state machine's strand and returns its result (for tests).
  template <class F>
  auto inspect(F fn) -> decltype(fn(std::declval<const SchedulerState&>()));

  /// How many task specs (with their argument frames) the server holds (for tests). Not from
  /// the context's own threads.
  std::size_t held_specs();
  /// The bytes of the argument frames those specs hold (data sent with tasks, or scattered
  /// through the scheduler), for tests. Not from the context's own threads.
  std::uint64_t held_spec_bytes();

  struct Impl;  ///< implementation detail (scheduler_server.cpp)

 private:
  std::shared_ptr<Impl> impl_;
  std::shared_future<void> finished_;
};

}  // namespace taskwire::scheduler

#include <taskwire/scheduler/scheduler_server_inspect.hpp>
