#pragma once
// What the parts of the worker server share: its options, its strand, its data store (and
// the spill directory under it), the state machine, its name and address, whether it is
// closing, and what the parts ask of the whole (WorkerActions). Worker::Impl
// (worker_server_impl.hpp) owns the core and the parts; the parts (scheduler_link.hpp,
// task_runner.hpp, peer_fetcher.hpp, data_server.hpp, memory_monitor.hpp,
// dashboard_service.hpp) borrow it. Not installed API.
#include <taskwire/comm/core/handshake.hpp>
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/worker/spill_directory.hpp>
#include <taskwire/worker/worker_server.hpp>
#include <taskwire/worker/worker_state.hpp>

#include <memory>
#include <string>
#include <vector>

namespace taskwire::worker {

/// What a stopped worker leaves to the next one in the same process (Worker::keep_data).
struct KeptData {
  SpillDirectory directory;
  std::shared_ptr<DataStore> data;
};

/// What the parts ask of the worker as a whole; Worker::Impl does it. On the strand only.
class WorkerActions {
 public:
  /// Runs `events` through the state machine and carries out the instructions they cause
  /// (nothing once the worker is closing).
  virtual void handle(std::vector<Event> events) = 0;
  /// Closes the worker, once: `clean` as in CloseStatus, `reason` for the log and the status.
  virtual void begin_close(std::string reason, bool clean) = 0;

 protected:
  ~WorkerActions() = default;
};

struct WorkerCore {
  /// `kept`: the results and spill directory of the worker this one replaces; else a fresh
  /// spill directory (with a memory limit: std::runtime_error if it cannot be made) and store.
  WorkerCore(runtime::Context& context, comm::Registry& registry, WorkerOptions options,
             std::shared_ptr<KeptData> kept);
  WorkerCore(const WorkerCore&) = delete;
  WorkerCore& operator=(const WorkerCore&) = delete;

  /// A strong hold on the owner, for a handler that keeps the worker alive until it runs.
  std::shared_ptr<const void> hold() const { return owner.lock(); }

  runtime::Context& context;
  comm::Registry& registry;
  WorkerOptions options;             ///< nthreads at least 1
  comm::HandshakeOptions handshake;  ///< role "worker", the name if one was given
  SpillDirectory spill_directory;    ///< made for this worker; empty: no spilling
  asio::strand<asio::any_io_executor> strand;
  std::shared_ptr<DataStore> data;
  std::unique_ptr<WorkerState> state;  ///< made by start(), once the address is known
  std::string address, name;           ///< set by start() before any handler runs
  /// On the strand: begin_close() ran: no new work, no new messages.
  bool closing = false;
  /// The Worker::Impl owning the parts. Handlers hold it (strongly through hold(), or weakly
  /// where the worker owns what keeps the handler: a comm's read, a listener, a timer of a
  /// peer link), never a part alone: a part lives exactly as long as its owner.
  std::weak_ptr<const void> owner;
};

}  // namespace taskwire::worker
