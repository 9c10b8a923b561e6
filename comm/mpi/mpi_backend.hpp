#pragma once
// mpi:// : comms between ranks of one MPI job (or within one rank), over the runtime's
// private communicator. Addresses are mpi://RANK or mpi://RANK:PORT (see mpi_wire.hpp).
//
// Needs a live MpiEnvironment: creating and registering the backend makes no MPI
// call, but connect and listen fail with a clear error until an environment exists. All
// backends of a process share its one MpiPoller; each backend drives it from its own
// Context's io_context (see mpi_poller.hpp). Destroy the backend (its Registry) before its
// Context.
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/runtime/context.hpp>

#include <memory>
#include <mutex>

namespace taskwire::comm::mpi {

class MpiPoller;
class PollDriver;

/// What a backend's connectors and listeners share; outlives the backend if they do.
class MpiBackendCore {
 public:
  explicit MpiBackendCore(runtime::Context& context) : context_(context) {}
  ~MpiBackendCore();
  runtime::Context& context() const noexcept { return context_; }
  /// The poller, with this backend's driver started; null without an MpiEnvironment or
  /// once stopped.
  std::shared_ptr<MpiPoller> poller();
  /// Alive while the backend is: the poller posts nothing to this Context after stop().
  const std::shared_ptr<bool>& owner() const noexcept { return owner_; }
  void stop() noexcept;

 private:
  runtime::Context& context_;
  std::mutex mu_;
  std::shared_ptr<MpiPoller> poller_;
  std::shared_ptr<PollDriver> driver_;
  std::shared_ptr<bool> owner_ = std::make_shared<bool>(true);
  bool stopped_ = false;
};

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(runtime::Context& context);
  ~MpiBackend() override;  ///< stops this backend's poll driver
  std::string_view scheme() const noexcept override { return "mpi"; }
  std::unique_ptr<Connector> make_connector() override;
  std::unique_ptr<Listener> make_listener(const Address& address,
                                          RawAcceptHandler on_comm,
                                          const RawListenOptions& options) override;
  /// The poll drivers' counters (mpi_poll_stats.hpp), which are the process's.
  std::vector<BackendCounter> counters() const override;

 private:
  std::shared_ptr<MpiBackendCore> core_;
};

}  // namespace taskwire::comm::mpi
