#include <taskwire/comm/mpi/mpi_backend.hpp>
#include <taskwire/comm/mpi/mpi_connector.hpp>
#include <taskwire/comm/mpi/mpi_listener.hpp>
#include <taskwire/comm/mpi/mpi_poll_stats.hpp>
#include <taskwire/comm/mpi/mpi_poller.hpp>


namespace taskwire::comm::mpi {

MpiBackendCore::~MpiBackendCore() { stop(); }

std::shared_ptr<MpiPoller> MpiBackendCore::poller() {
  std::lock_guard lock(mu_);
  if (stopped_) return nullptr;
  if (poller_) return poller_;
  auto p = MpiPoller::instance();
  if (!p) return nullptr;
  driver_ = std::make_shared<PollDriver>(p, context_.executor(), context_.config().mpi);
  driver_->start();
  poller_ = std::move(p);
  return poller_;
}

void MpiBackendCore::stop() noexcept {
  std::lock_guard lock(mu_);
  if (stopped_) return;
  stopped_ = true;
  if (driver_) driver_->stop();
  if (poller_) poller_->detach_owner(owner_);
}

MpiBackend::MpiBackend(runtime::Context& context)
    : core_(std::make_shared<MpiBackendCore>(context)) {}

MpiBackend::~MpiBackend() { core_->stop(); }

std::unique_ptr<Connector> MpiBackend::make_connector() {
  return std::make_unique<MpiConnector>(core_);
}

std::unique_ptr<Listener> MpiBackend::make_listener(const Address& address,
                                                    RawAcceptHandler on_comm,
                                                    const RawListenOptions&) {
  return std::make_unique<MpiListener>(core_, address, std::move(on_comm));
}

std::vector<BackendCounter> MpiBackend::counters() const {
  std::vector<BackendCounter> out;
  for (const auto& m : poll_metrics()) out.push_back({m.name, m.help, m.value});
  return out;
}

}  // namespace taskwire::comm::mpi
