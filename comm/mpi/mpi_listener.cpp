#include <taskwire/comm/mpi/mpi_backend.hpp>
#include <taskwire/comm/mpi/mpi_listener.hpp>
#include <taskwire/comm/mpi/mpi_poller.hpp>

namespace taskwire::comm::mpi {

MpiListener::MpiListener(std::shared_ptr<MpiBackendCore> core, Address address,
                         RawAcceptHandler on_comm)
    : core_(std::move(core)), address_(std::move(address)), on_comm_(std::move(on_comm)) {}

MpiListener::~MpiListener() { stop(); }

void MpiListener::start() {
  if (entry_) return;
  const auto at = MpiLocation::parse(address_.location);
  auto poller = core_->poller();
  if (!poller)
    throw CommError(make_error_code(errc::bad_address),
                    fmt::format("cannot listen on {}: {}", address_,
                                MpiPoller::no_environment_text()));
  if (at.rank != poller->rank())
    throw CommError(make_error_code(errc::bad_address),
                    fmt::format("cannot listen on {}: this process is rank {}; a rank listens "
                                "only on its own addresses (mpi://{}[:PORT])",
                                address_, poller->rank(), poller->rank()));
  auto entry = std::make_shared<ListenerEntry>();
  entry->owner = core_->owner();
  entry->executor = core_->context().executor();
  entry->on_comm = on_comm_;
  entry->limits = core_->context().config().limits;
  entry->max_chunk_bytes = core_->context().config().mpi.max_chunk_bytes;
  entry->address = at.str();
  poller->add_listener(at.port, entry);
  poller_ = std::move(poller);
  entry_ = std::move(entry);
  port_ = at.port;
}

void MpiListener::stop() noexcept {
  if (!entry_) return;
  poller_->remove_listener(port_, entry_.get());
  entry_.reset();
}

std::string MpiListener::listen_address() const {
  if (entry_) return entry_->address;
  try {
    return MpiLocation::parse(address_.location).str();
  } catch (const CommError&) {
    return address_.str();
  }
}

}  // namespace taskwire::comm::mpi
