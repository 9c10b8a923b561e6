#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/inproc/inproc_backend.hpp>
#include <taskwire/comm/mpi/mpi_backend.hpp>
#include <taskwire/comm/tcp/tcp_backend.hpp>
#include <taskwire/comm/tls/tls_backend.hpp>

namespace taskwire::comm {

void register_builtin_backends(Registry& registry) {
  registry.add(std::make_unique<inproc::InprocBackend>(registry.context()));
  registry.add(std::make_unique<tcp::TcpBackend>(registry.context()));
  registry.add(std::make_unique<tls::TlsBackend>(registry.context()));  // no file read until used
  registry.add(std::make_unique<mpi::MpiBackend>(registry.context()));  // no MPI call until used
}

}  // namespace taskwire::comm
