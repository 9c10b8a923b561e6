#pragma once
// Serving this worker's data: its listeners accept peers and clients, and each accepted comm
// is served on its own strand: get_data answered from the data store (thread-safe), so that
// serving never waits for the worker's strand; update_data (a client scattering data here,
// client_data.cpp) stored by the state machine on the worker's strand and answered from there.
// Not installed API.
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/batch.hpp>
#include <taskwire/worker/served_comms.hpp>
#include <taskwire/worker/worker_core.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace taskwire::worker {

class DataServer {
 public:
  DataServer(WorkerCore& core, WorkerActions& actions)
      : core_(core), actions_(actions), unknown_timer_(core.strand) {}
  DataServer(const DataServer&) = delete;
  DataServer& operator=(const DataServer&) = delete;

  /// Not on the strand (start()): listens at `address` and serves what it accepts; the
  /// listener lives as long as the server. Throws comm::CommError (address in use...).
  void listen(const std::string& address);
  /// What listen() made, in order.
  const std::vector<std::unique_ptr<comm::Listener>>& listeners() const { return listeners_; }
  /// Closing, on the strand: stops accepting; then closes every comm still served (replies
  /// already queued still go).
  void stop_listening();
  void close_served() {
    parked_.clear();
    unknown_timer_.cancel();
    served_.close_all();
  }
  /// On the strand, after the state machine ran: answers the waiting get_data requests
  /// whose key this worker has now computed, or no longer computes.
  void answer_parked() {
    if (!parked_.empty()) answer_parked_now();
  }

 private:
  // Data a client scattered here (update_data, client_data.cpp): read from the request on
  // the comm's strand, stored by the state machine on the worker's, answered from there.
  struct ClientData {
    std::uint64_t request_id = 0;
    std::vector<std::pair<protocol::Key, runtime::Frame>> data;
  };

  // A get_data that waits for a key this worker computes (protocol::GetData::wait).
  struct Waiting {
    std::weak_ptr<comm::Comm> comm;
    std::uint64_t request_id = 0;
    protocol::Key key;
    std::chrono::steady_clock::time_point since{};  ///< parked then
  };

  void on_accept(comm::CommPtr comm);
  /// On the strand: each request is answered now, or parked until its key is done.
  void park(std::vector<Waiting> waits);
  void answer_parked_now();
  void answer_waiting(const Waiting& w);
  /// Parked requests for keys this worker does not know are answered missing after a while.
  void watch_unknown();
  void serve(comm::CommPtr comm);
  /// Answers `request`, then serves the comm's next one once the reply is handed over; false
  /// (the comm aborted) for a malformed request.
  bool answer(const comm::CommPtr& comm, const runtime::Message& request);
  /// Writes `reply` (if any), then reads the comm's next request (serve()).
  void reply_then_serve(const comm::CommPtr& comm, runtime::BatchWriter reply);
  static void take_client_data(runtime::OpReader& r, std::vector<ClientData>& out);
  void store_client_data(const comm::CommPtr& comm, std::vector<ClientData> updates,
                         runtime::BatchWriter reply);

  WorkerCore& core_;
  WorkerActions& actions_;
  /// The first at the worker's own address, then WorkerOptions::extra_listen_addresses'.
  std::vector<std::unique_ptr<comm::Listener>> listeners_;
  ServedComms served_;  ///< accepted comms, each served on its own strand
  std::vector<Waiting> parked_;  ///< on the strand: requests waiting for a task here
  asio::steady_timer unknown_timer_;
  bool watching_unknown_ = false;
};

}  // namespace taskwire::worker
