#pragma once
// Connects to mpi://RANK[:PORT]: a HELLO on a fresh tag, then the listener's ACCEPT or
// REFUSED (errc::refused, retried by comm::connect until its deadline). The handler runs on
// the backend's Context executor.
#include <taskwire/comm/core/backend.hpp>

#include <memory>

namespace taskwire::comm::mpi {

class MpiBackendCore;

class MpiConnector final : public Connector {
 public:
  explicit MpiConnector(std::shared_ptr<MpiBackendCore> core) : core_(std::move(core)) {}
  /// Fails with errc::bad_address (fatal) for a malformed address, a rank outside the job,
  /// or when no MpiEnvironment exists (the reason is logged); errc::closed when the rank
  /// said GOODBYE or MPI is shutting down.
  void async_connect(const Address& address, RawConnectHandler handler) override;

 private:
  std::shared_ptr<MpiBackendCore> core_;
};

}  // namespace taskwire::comm::mpi
