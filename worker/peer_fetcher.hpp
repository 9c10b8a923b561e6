#pragma once
// Fetching dependencies from peer workers: each GatherDep becomes a get_data on a connection
// kept per peer and reused, whose data_reply (or failure, or silence past
// WorkerOptions::fetch_timeout) goes back to the state machine as GatherDepDone or
// GatherDepFailed. On the worker's strand only. Not installed API.
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/worker/dashboard_service.hpp>
#include <taskwire/worker/worker_core.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace taskwire::worker {

/// A connection this worker opened to a peer to fetch data, reused for every GatherDep to
/// that peer.
struct PeerLink {
  PeerLink(std::string peer, const asio::strand<asio::any_io_executor>& strand)
      : address(std::move(peer)), fetch_deadline(strand) {}

  std::string address;
  comm::CommPtr comm;
  bool connecting = false;
  /// Requests waiting for the connection: (request id, keys).
  std::deque<std::pair<std::uint64_t, std::vector<Key>>> pending;
  std::set<std::uint64_t> pending_waits;  ///< of those, the waiting ones
  /// Requests sent and not answered yet.
  std::map<std::uint64_t, std::vector<Key>> outstanding;
  /// Of those, the waiting ones (GatherDep::wait): answered when the peer's task is done,
  /// however long it runs, so the fetch deadline does not count them.
  std::set<std::uint64_t> waits;
  /// While requests are outstanding, checks every WorkerOptions::fetch_timeout / 4 whether
  /// anything arrived (see peer_fetcher.cpp); `watching` while a check is pending.
  asio::steady_timer fetch_deadline;
  bool watching = false;
  std::uint64_t bytes_seen = 0;  ///< comm->bytes_received() when progress was last seen
  std::chrono::steady_clock::time_point quiet_since{};  ///< when progress was last seen
  /// When each outstanding request was sent (steady_seconds()), for the task streams.
  std::map<std::uint64_t, double> sent_at;
};

class PeerFetcher {
 public:
  PeerFetcher(WorkerCore& core, WorkerActions& actions, DashboardService& dashboard)
      : core_(core), actions_(actions), dashboard_(dashboard) {}
  PeerFetcher(const PeerFetcher&) = delete;
  PeerFetcher& operator=(const PeerFetcher&) = delete;

  /// Asks `request.worker` for `request.keys`, connecting first if needed.
  void gather(GatherDep request);
  /// Closing: aborts every peer's connection and forgets the links.
  void close_all();

 private:
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

  WorkerCore& core_;
  WorkerActions& actions_;
  DashboardService& dashboard_;
  std::map<std::string, std::shared_ptr<PeerLink>> peers_;
  std::uint64_t next_request_id_ = 0;
};

}  // namespace taskwire::worker
