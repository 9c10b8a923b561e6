#include <taskwire/comm/mpi/mpi_backend.hpp>
#include <taskwire/comm/mpi/mpi_connector.hpp>
#include <taskwire/comm/mpi/mpi_poller.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::comm::mpi {

void MpiConnector::async_connect(const Address& address, RawConnectHandler handler) {
  auto executor = core_->context().executor();
  auto fail = [&](errc e) {
    asio::post(executor, [h = std::move(handler), e] { h(make_error_code(e), nullptr); });
  };
  MpiLocation to;
  try {
    to = MpiLocation::parse(address.location);
  } catch (const CommError& e) {
    spdlog::error("{}", e.what());
    return fail(errc::bad_address);
  }
  auto poller = core_->poller();
  if (!poller) {
    spdlog::error("cannot connect to {}: {}", address, MpiPoller::no_environment_text());
    return fail(errc::bad_address);
  }
  poller->connect(to, executor, core_->context().config(), core_->owner(), std::move(handler));
}

}  // namespace taskwire::comm::mpi
