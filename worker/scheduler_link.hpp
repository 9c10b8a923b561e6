#pragma once
// The worker's connection to its scheduler: connecting (cancellable), registering, reading
// the scheduler's batches into the state machine's events, the heartbeat, the operations
// batched for the scheduler (one write per handler or event-loop turn), the state machine's
// reports, and the goodbye (worker_closing) on a clean close. connect(), cancel_connect()
// and local_address() are for start() and request_stop(); the rest runs on the worker's
// strand. Not installed API.
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/batch.hpp>
#include <taskwire/worker/worker_core.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskwire::worker {

/// How long a closing worker waits for its scheduler to take its last messages.
inline constexpr std::chrono::milliseconds kGoodbyeTimeout{5000};

class SchedulerLink {
 public:
  SchedulerLink(WorkerCore& core, WorkerActions& actions);
  SchedulerLink(const SchedulerLink&) = delete;
  SchedulerLink& operator=(const SchedulerLink&) = delete;

  /// Blocking, not on the strand: connects to options.scheduler_address with `options`; a
  /// daemon may wait without a time limit, so cancel_connect() can end the wait. Throws
  /// comm::CommError (unreachable, refused, aborted by cancel_connect()...).
  void connect(comm::ConnectOptions options);
  /// Any thread: if connect() is waiting, cancels it (it then throws CommError(aborted))
  /// and returns true.
  bool cancel_connect();
  /// The local end of the connection (after connect()).
  std::string local_address() const { return comm_->local_address(); }
  /// start() failed after connect(): aborts and drops the connection.
  void abandon();

  // ---- on the strand ----
  /// Queues register_worker and a first heartbeat (so that the scheduler knows the worker's
  /// memory from the start).
  void register_worker(protocol::RegisterWorker registration);
  /// Reads the scheduler's batches and sends heartbeats from now on.
  void start_reading();
  /// Queues `op` for the scheduler (nothing once closing): sent when the handler running
  /// the state machine ends (end_batch()), or else on the next turn of the event loop.
  template <class T>
  void send(protocol::Op op, const T& body, std::vector<runtime::Frame> payload = {});
  /// Around the state machine's handler: what it sends goes as one message at end_batch(),
  /// which logs (and does not throw) when the write cannot be started.
  void begin_batch() { handling_ = true; }
  void end_batch();
  /// The state machine's reports, as operations to the scheduler.
  void report(SendTaskFinished& i);
  void report(SendTaskErred& i);
  void report(SendMissingData& i);
  void report(SendAddKeys& i);
  void report(SendStealResponse& i);
  /// Sends threads_busy when the count of threads running cancelled tasks changed, or when
  /// the scheduler asked (free_processing).
  void report_busy_threads(std::size_t busy);

  // ---- closing, on the strand ----
  void stop_heartbeats() { heartbeat_.cancel(); }
  /// Queues worker_closing after what is queued and writes it all; `then` runs on the strand
  /// once the write is handed over, or after kGoodbyeTimeout (the connection is then aborted),
  /// possibly both. False (nothing done) without an open connection.
  bool say_goodbye(std::function<void()> then);
  /// Aborts the connection, if any.
  void abort();
  /// Ends the goodbye's wait and closes the connection gracefully.
  void close();
  /// The connection failed, or the scheduler dropped this worker but would take it back
  /// (CloseStatus::scheduler_lost).
  bool lost() const { return lost_; }

 private:
  /// What one batch from the scheduler asks besides events.
  struct Requests {
    std::optional<protocol::CloseWorker> close;
    std::optional<std::string> refused;
  };
  void read();
  void on_message(error_code ec, runtime::Message message);
  /// Throws runtime::SerializationError on an operation a worker does not take.
  void decode(runtime::Message& message, std::vector<Event>& events, Requests& requests);
  ComputeTaskEvent compute_task_event(runtime::OpReader& r);
  void flush();
  void schedule_heartbeat();
  void send_heartbeat();

  WorkerCore& core_;
  WorkerActions& actions_;
  comm::CommPtr comm_;

  // connect(), which cancel_connect() may end from another thread.
  std::mutex connect_mu_;
  bool connecting_ = false;
  bool stop_while_connecting_ = false;
  comm::PendingConnect pending_connect_;

  // On the strand.
  runtime::BatchWriter outbox_;  ///< to the scheduler, flushed once per event-loop turn
  bool flush_posted_ = false;
  bool handling_ = false;  ///< between begin_batch() and end_batch(), which flushes
  asio::steady_timer heartbeat_;
  asio::steady_timer goodbye_timer_;  ///< bounds the wait for worker_closing to be sent
  std::size_t reported_busy_threads_ = 0;  ///< last threads_busy sent
  bool busy_threads_asked_ = false;        ///< free_processing came: answer threads_busy
  bool lost_ = false;
};

template <class T>
void SchedulerLink::send(protocol::Op op, const T& body, std::vector<runtime::Frame> payload) {
  if (core_.closing) return;
  if (!handling_ && !flush_posted_) {  // end_batch() flushes when the handler is done
    flush_posted_ = true;
    runtime::post_urgent(core_.context.urgent(), core_.strand,
                         [this, held = core_.hold()] { flush(); });
  }
  outbox_.add(op, body, std::move(payload));
}

}  // namespace taskwire::worker
