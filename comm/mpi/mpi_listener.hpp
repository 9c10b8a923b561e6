#pragma once
// Listens on mpi://RANK[:PORT], RANK being this process's own rank. Connections arriving
// for a port nobody listens on are answered REFUSED. Accepted comms go to `on_comm` on the
// backend's Context executor.
#include <taskwire/comm/core/backend.hpp>

#include <memory>

namespace taskwire::comm::mpi {

class MpiBackendCore;
class MpiPoller;
struct ListenerEntry;

class MpiListener final : public Listener {
 public:
  MpiListener(std::shared_ptr<MpiBackendCore> core, Address address, RawAcceptHandler on_comm);
  ~MpiListener() override;
  /// Throws CommError: bad_address (malformed, another rank's address, or no
  /// MpiEnvironment), io (port in use), closed (MPI shutting down).
  void start() override;
  void stop() noexcept override;
  std::string listen_address() const override;
  std::string contact_address() const override { return listen_address(); }

 private:
  std::shared_ptr<MpiBackendCore> core_;
  Address address_;
  RawAcceptHandler on_comm_;
  std::shared_ptr<MpiPoller> poller_;
  std::shared_ptr<ListenerEntry> entry_;
  std::uint32_t port_ = 0;
};

}  // namespace taskwire::comm::mpi
