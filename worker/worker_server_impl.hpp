#pragma once
// Internals of the worker server, shared by worker_server.cpp (lifecycle, scheduler link),
// task_execution.cpp (running tasks) and peer_transfers.cpp (fetching from peers, serving
// get_data). Not installed API: include worker_server.hpp.
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/http/http_server.hpp>
#include <taskwire/http/loop_lag.hpp>
#include <taskwire/runtime/batch.hpp>
#include <taskwire/worker/executor.hpp>
#include <taskwire/worker/inline_run_policy.hpp>
#include <taskwire/worker/served_comms.hpp>
#include <taskwire/worker/spill_directory.hpp>
#include <taskwire/worker/worker_dashboard.hpp>
#include <taskwire/worker/worker_server.hpp>
#include <taskwire/worker/worker_state.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskwire::worker {

/// A connection this worker opened to a peer to fetch data, reused for every GatherDep to
/// that peer. Touched only on the worker's strand.
struct PeerLink {
  PeerLink(std::string peer, const asio::strand<asio::any_io_executor>& strand)
      : address(std::move(peer)), fetch_deadline(strand) {}

  std::string address;
  comm::CommPtr comm;
  bool connecting = false;
  /// Requests waiting for the connection: (request id, keys).
  std::deque<std::pair<std::uint64_t, std::vector<Key>>> pending;
  /// Requests sent and not answered yet.
  std::map<std::uint64_t, std::vector<Key>> outstanding;
  /// While requests are outstanding, checks every WorkerOptions::fetch_timeout / 4 whether
  /// anything arrived (see peer_transfers.cpp); `watching` while a check is pending.
  asio::steady_timer fetch_deadline;
  bool watching = false;
  std::uint64_t bytes_seen = 0;  ///< comm->bytes_received() when progress was last seen
  std::chrono::steady_clock::time_point quiet_since{};  ///< when progress was last seen
  /// When each outstanding request was sent (steady_seconds()), for the task streams.
  std::map<std::uint64_t, double> sent_at;
};

inline constexpr std::chrono::milliseconds kGoodbyeTimeout{5000};
/// A fresh directory for this worker's spilled results inside options.local_directory (or
/// the temporary directory), after removing those of dead workers there; none (empty)
/// without a memory limit. Throws std::runtime_error naming the directory when it cannot be
/// made.
SpillDirectory make_spill_directory(const MemoryOptions& options);
SpillOptions spill_options(const MemoryOptions& options, const std::filesystem::path& directory);

struct KeptData {
  SpillDirectory directory;
  std::shared_ptr<DataStore> data;
};

class Worker::Impl : public std::enable_shared_from_this<Worker::Impl> {
 public:
  Impl(runtime::Context& context, comm::Registry& registry, WorkerOptions options,
       std::shared_ptr<KeptData> kept);
  std::shared_ptr<KeptData> keep_data();
  ~Impl();  ///< removes the spill directory

  void start();
  void request_stop();
  void join_executor() { executor_.stop(); }
  bool wait_closed(std::chrono::milliseconds timeout);
  CloseStatus close_status() const;
  std::string address() const;
  std::string name() const;
  const DataStore& data() const { return *data_; }
  std::string dashboard_url() const { return http_ ? http_->url() : std::string(); }

 private:
  // worker_server.cpp
  void on_started();
  void read_scheduler();
  void on_scheduler_message(error_code ec, runtime::Message message);
  void handle(std::vector<Event> events);
  void run(Instructions instructions);
  // task_execution.cpp
  void execute(Execute task);
  Event run_task(Execute& task);
  void record_duration(const std::string& function, const Event& result, bool ran_inline);
  void log_result(const std::string& function, const Event& result) const;
  void on_executed(std::string function, Event result);
  void drain_executed();
  template <class T>
  void to_scheduler(protocol::Op op, const T& body, std::vector<runtime::Frame> payload = {});
  void flush();
  void schedule_heartbeat();
  void send_heartbeat();
  void begin_close(std::string reason, bool clean);
  /// WorkerOptions::retire_at: asks the scheduler to retire this worker, then bounds the wait.
  void start_lifetime();
  void on_lifetime_over();
  void finish_close(std::string reason, bool clean);

  // worker_memory.cpp
  void start_memory_monitor();
  void check_memory();
  void give_back_kept_pages(std::uint64_t memory);
  std::uint64_t spill_for_process_memory(std::uint64_t memory);
  void update_pause(std::uint64_t memory);
  void terminate_for_memory(std::uint64_t memory);

  // worker_http.cpp
  void start_dashboard();
  void stop_dashboard();
  void record_task_done(const std::string& function, const Event& result);
  static void serve_http(const std::weak_ptr<Impl>& weak, const http::HttpRequest& request,
                         http::HttpRespond respond);
  WorkerFacts collect_facts(const http::RoutedRequest& request) const;

  // peer_transfers.cpp
  void gather(GatherDep request);
  void connect_peer(const std::shared_ptr<PeerLink>& link);
  void send_request(const std::shared_ptr<PeerLink>& link, std::uint64_t id,
                    std::vector<Key> keys);
  void note_fetch_progress(PeerLink& link);
  void watch_fetches(const std::shared_ptr<PeerLink>& link);
  void check_fetch_deadline(const std::shared_ptr<PeerLink>& link);
  void read_peer(const std::shared_ptr<PeerLink>& link, const comm::CommPtr& comm);
  void on_peer_message(const std::shared_ptr<PeerLink>& link, const comm::CommPtr& comm,
                       error_code ec, runtime::Message message);
  void fail_link(PeerLink& link, const std::string& reason);
  void record_transfer(const PeerLink& link, double seconds, const std::vector<Key>& keys,
                       std::span<const runtime::Frame> frames);  // worker_http.cpp
  static protocol::TaskFinished task_finished_message(const SendTaskFinished& i);
  void on_accept(comm::CommPtr comm);
  void serve(comm::CommPtr comm);
  /// Answers `request`, then serves the comm's next one once the reply is handed over; false
  /// (the comm aborted) for a malformed request.
  bool answer(const comm::CommPtr& comm, const runtime::Message& request);
  // Data a client scattered here (update_data, client_data.cpp): read from the request on
  // the comm's strand, stored by the state machine on the worker's, answered from there.
  struct ClientData {
    std::uint64_t request_id = 0;
    std::vector<std::pair<protocol::Key, runtime::Frame>> data;
  };
  static void take_client_data(runtime::OpReader& r, std::vector<ClientData>& out);
  void store_client_data(const comm::CommPtr& comm, std::vector<ClientData> updates,
                         runtime::BatchWriter reply);
  /// Writes `reply` (if any), then reads the comm's next request (serve()).
  void reply_then_serve(const comm::CommPtr& comm, runtime::BatchWriter reply);

  runtime::Context& context_;
  comm::Registry& registry_;
  WorkerOptions options_;
  comm::HandshakeOptions handshake_;
  SpillDirectory spill_directory_;  ///< made for this worker; empty: no spilling
  asio::strand<asio::any_io_executor> strand_;
  std::shared_ptr<DataStore> data_;
  Executor executor_;
  std::unique_ptr<WorkerState> state_;  // created by start(), once the address is known
  std::unique_ptr<comm::Listener> listener_;
  // WorkerOptions::extra_listen_addresses', and what they advertise (other_addresses_).
  std::vector<std::unique_ptr<comm::Listener>> extra_listeners_;
  std::vector<std::string> other_addresses_;
  comm::CommPtr scheduler_;
  std::string address_, name_;  // set by start() before any handler runs

  // On the strand.
  runtime::BatchWriter outbox_;  // to the scheduler, flushed once per event-loop turn
  bool flush_posted_ = false;
  bool handling_ = false;  // inside handle(), which flushes the outbox at its end
  asio::steady_timer heartbeat_;
  asio::steady_timer goodbye_timer_;  // bounds the wait for worker_closing to be sent
  asio::steady_timer memory_timer_;   // MemoryOptions::monitor_interval
  asio::steady_timer lifetime_timer_;  // WorkerOptions::retire_at, then retire_grace
  bool spill_warned_ = false;  // process memory past `spill` with nothing left to spill
  std::map<std::string, std::shared_ptr<PeerLink>> peers_;
  std::uint64_t next_request_id_ = 0;
  InlineRunPolicy inline_runs_;
  std::vector<Event> inline_done_;  ///< results of tasks run inline, for handle()
  std::size_t reported_busy_threads_ = 0;  ///< last threads_busy sent
  bool busy_threads_asked_ = false;        ///< free_processing came: answer threads_busy

  // Results from pool threads, waiting for the strand (drain_executed).
  struct Executed {
    std::string function;
    Event result;
  };
  std::mutex executed_mu_;
  std::vector<Executed> executed_;
  bool executed_posted_ = false;
  bool scheduler_lost_ = false;  // see CloseStatus::scheduler_lost
  bool closing_ = false;  // begin_close() ran: no new work, no new messages
  bool closed_ = false;   // finish_close() ran: status_ says closed
  std::atomic<bool> started_{false};  // start() got past its checks

  std::unique_ptr<comm::Listener> listen_at_address(const std::string& address);
  // start()'s connect to the scheduler, which request_stop() cancels: a daemon may wait for
  // its scheduler without a time limit.
  comm::CommPtr connect_to_scheduler(comm::ConnectOptions options);
  std::mutex connect_mu_;
  bool connecting_ = false;
  bool stop_while_connecting_ = false;
  comm::PendingConnect pending_connect_;

  // Comms accepted by the listener, each served on its own strand.
  ServedComms served_;

  // The dashboard (WorkerOptions::dashboard): recorder on the strand, server on its own.
  std::unique_ptr<WorkerDashboardRecorder> recorder_;
  std::unique_ptr<http::HttpServer> http_;
  std::shared_ptr<http::LoopLagProbe> lag_;

  mutable std::mutex status_mu_;
  std::condition_variable status_cv_;
  CloseStatus status_;
};

}  // namespace taskwire::worker
