#pragma once
// What travels on the simulated network: one struct per protocol operation the servers
// exchange (runtime/protocol.hpp), carried without serialization (the wire format has tests
// of its own), plus the harness's local items: timers, task completions, faults.
//
// An envelope carries a batch of operations, as the servers send one message per peer per
// handled event; a worker handles all the operations of one batch in one handle() call, as
// worker_server.cpp does.
#include <taskwire/runtime/frame.hpp>
#include <taskwire/worker/worker_events.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace taskwire::sim {

using runtime::Frame;

// ---- scheduler -> worker ----
struct OpComputeTask {
  worker::ComputeTaskEvent event;
};
struct OpFreeKeys {
  std::vector<std::string> keys;
  bool processing = false;  ///< free_processing: the worker answers with threads_busy
};
struct OpStealRequest {
  std::string key;
  std::uint64_t attempt = 0;
};
struct OpCloseWorker {
  bool rejoin = true;  ///< false: it retired, and ends for good
};
struct OpAcquireReplicas {
  protocol::WhoHas who_has;
};
struct OpWorkerRefused {
  std::string reason;
};

// ---- worker -> scheduler ----
struct OpRegister {
  std::string name;
  int nthreads = 1;
  bool nanny = false;
  std::vector<std::string> held = {};  ///< results kept from before (joining again)
};
struct OpHeartbeat {};
struct OpTaskFinished {
  std::string key;
  std::uint64_t nbytes = 0;
  double duration = 0;
  std::optional<Frame> result;  ///< sent inline (small results), forwarded to the client
  std::uint64_t attempt = 0;
};
struct OpTaskErred {
  std::string key, message, exception_type;
  std::uint64_t attempt = 0;
};
struct OpMissingData {
  std::string key, missing, from;
  bool awaited = false;
};
struct OpThreadsBusy {
  int count = 0;
};
struct OpStealResponse {
  std::string key;
  bool stolen = false;
  std::uint64_t attempt = 0;
};
struct OpWorkerStatus {
  bool paused = false;
};
struct OpRetireWorker {};  ///< its lifetime is over
struct OpRetireWorkers {   ///< the client asks (Client::retire_workers)
  std::vector<std::string> workers;
};
struct OpAddKeys {
  std::vector<std::string> keys;
};
/// Not an operation: the connection closed (after everything sent before it). `expected`
/// when the worker said goodbye (worker_closing) first.
struct OpConnectionClosed {
  bool expected = false;
  std::string reason;
};

// ---- nanny -> scheduler ----
struct OpWorkerDied {
  std::string address, name, cause;
  std::vector<std::string> running;
};

// ---- worker <-> worker ----
struct OpGetData {
  std::uint64_t id = 0;
  std::vector<std::string> keys;
  bool wait = false;  ///< protocol::GetData::wait
};
struct OpDataReply {
  std::uint64_t id = 0;
  std::vector<std::pair<std::string, Frame>> data;
  std::vector<std::string> missing;
};
/// Not an operation: the sender's process is gone, so the receiver's comm to it fails.
struct OpPeerLost {};

// ---- client <-> scheduler ----
/// A task as a client submits it (protocol::TaskSpec): one inline argument, its own seed,
/// then its dependencies.
struct ClientTask {
  std::string key;
  std::vector<std::string> dependencies;
  std::int64_t priority = 0;
  int retries = 0;
  Frame seed;
};
struct OpUpdateGraph {
  std::vector<ClientTask> tasks;
  std::vector<std::string> wanted;
};
struct OpReleaseKeys {
  std::vector<std::string> keys;
};
struct OpKeyInMemory {
  std::string key;
  std::optional<Frame> value;
};
struct OpKeyErred {
  std::string key, blamed_key, message, cause;
};
struct OpKeyLost {
  std::string key;
};
struct OpKeyCancelled {
  std::vector<std::string> keys;
  std::string reason;
};

// ---- local items (not on the network) ----
/// A task's run on a worker thread ended: its ExecuteSuccess or ExecuteFailure.
struct LocalExecuted {
  worker::Event result;
};
struct LocalHeartbeatTimer {};  ///< a worker's heartbeat, or the scheduler's check
struct LocalFaultTimer {};
struct LocalUnpause {};
/// A retiring worker's grace is over (--lifetime-grace): if still there, it closes itself.
struct LocalRetireGrace {};
/// A worker process starts: `name` empty for a fresh name, else a nanny's restart under
/// its old one.
struct LocalJoin {
  std::string name;
};
struct LocalSubmit {};
/// The client fetches a result again after a fetch found no holder with it (`attempt` so far).
struct LocalFetchRetry {
  std::string key;
  int attempt = 0;
};

using Payload =
    std::variant<OpComputeTask, OpFreeKeys, OpStealRequest, OpCloseWorker, OpWorkerRefused,
                 OpRegister, OpHeartbeat, OpTaskFinished, OpTaskErred, OpMissingData,
                 OpThreadsBusy, OpStealResponse, OpWorkerStatus, OpConnectionClosed,
                 OpWorkerDied, OpGetData, OpDataReply, OpPeerLost, OpUpdateGraph, OpReleaseKeys,
                 OpKeyInMemory, OpKeyErred, OpKeyLost, OpKeyCancelled, LocalExecuted,
                 LocalHeartbeatTimer, LocalFaultTimer, LocalUnpause, LocalJoin, LocalSubmit,
                 LocalFetchRetry, OpAcquireReplicas, OpRetireWorker, OpAddKeys,
                 LocalRetireGrace, OpRetireWorkers>;

/// A visitor of lambdas, one per alternative.
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

/// One line for the trace, e.g. "compute-task 'chain-3'".
std::string describe(const Payload& p);

}  // namespace taskwire::sim
