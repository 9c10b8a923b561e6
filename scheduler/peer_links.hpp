#pragma once
// The scheduler server's peers: every comm it accepted, known by role once the peer said
// what it is (register_worker, a client operation, the handshake role "nanny"), and the
// messages batched for each until flush() (one write per peer per incoming message).
// On the scheduler's strand only. Not installed API.
#include <taskwire/comm/core/comm.hpp>
#include <taskwire/runtime/batch.hpp>
#include <taskwire/runtime/protocol.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace taskwire::scheduler {

struct Peer {
  enum Kind { unknown, worker, client } kind = unknown;
  comm::CommPtr comm;
  std::string id;  // worker address or client id
  std::vector<std::string> other_addresses;  // a worker's, from register_worker
  std::string host;                          // a worker's, from register_worker
  protocol::Heartbeat metrics;               // a worker's, from its last heartbeat
  runtime::BatchWriter out;
  bool closing = false;  // it said goodbye (worker_closing)
  bool refused = false;  // a worker turned away (RefuseWorker): closed once told why
};
using PeerPtr = std::shared_ptr<Peer>;

class PeerLinks {
 public:
  /// The worker registered at `address` or the client `id`; null when there is none.
  PeerPtr worker(const std::string& address) const { return find(workers_, address); }
  PeerPtr client(const std::string& id) const { return find(clients_, id); }
  const std::map<std::string, PeerPtr>& workers() const { return workers_; }
  std::size_t client_count() const { return clients_.size(); }

  /// `p` (its kind and id set) speaks for the worker `p->id` from now on.
  void add_worker(const PeerPtr& p) { workers_[p->id] = p; }
  /// Makes `p` a client named after its handshake unless it is one already; throws
  /// std::runtime_error when it is a worker.
  void become_client(const PeerPtr& p);
  /// Nannies' links: told of a shutdown (close_worker) so that a nanny whose worker is dead
  /// or starting ends instead of restarting it (worker/nanny.cpp).
  void add_nanny(const PeerPtr& p);
  /// False when there was no such worker or client.
  bool remove_worker(const std::string& address) { return workers_.erase(address) > 0; }
  bool remove_client(const std::string& id) { return clients_.erase(id) > 0; }

  /// The batch of messages to `p`, sent by flush(); null for a null `p`.
  runtime::BatchWriter* out_to(const PeerPtr& p);
  /// Writes every batch filled since the last flush.
  void flush();
  /// Queue close_worker (not to rejoin) for every worker, every nanny.
  void tell_workers_to_close(const std::string& reason);
  void tell_nannies_to_close(const std::string& reason);
  /// Closes (gracefully) every client's, worker's and nanny's comm.
  void close_all();
  /// Aborts every client's and worker's comm.
  void abort_all();

  /// The addresses `client` is told to fetch from: the holders' addresses on the scheme it
  /// reached this scheduler by first (a tcp:// client of an MPI job cannot reach mpi://).
  std::vector<std::string> holders_for(const Peer& client, std::vector<std::string> holders) const;

 private:
  static PeerPtr find(const std::map<std::string, PeerPtr>& m, const std::string& id) {
    auto it = m.find(id);
    return it == m.end() ? nullptr : it->second;
  }

  std::map<std::string, PeerPtr> workers_, clients_;
  std::vector<std::weak_ptr<Peer>> nannies_;
  std::vector<PeerPtr> touched_;  // peers whose batch is not empty
  std::uint64_t next_client_ = 0;
};

}  // namespace taskwire::scheduler
