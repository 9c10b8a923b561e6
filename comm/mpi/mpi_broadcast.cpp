#include <taskwire/comm/mpi/mpi_broadcast.hpp>

#include <taskwire/comm/core/host_address.hpp>

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <stdexcept>

namespace taskwire::comm::mpi {
namespace {

void polled_bcast(MpiEnvironment& env, void* data, int count, MPI_Datatype type, int root) {
  MPI_Request req = MPI_REQUEST_NULL;
  int rc;
  {
    std::lock_guard lock(*env.mutex());
    rc = MPI_Ibcast(data, count, type, root, env.comm(), &req);
  }
  env.wait_polled(req, rc, "MPI_Ibcast");
}

}  // namespace

std::string broadcast(MpiEnvironment& env, const std::string& value, int root) {
  if (env.is_shut_down()) throw std::runtime_error("broadcast() after MpiEnvironment::shutdown()");
  if (root < 0 || root >= env.size())
    throw std::invalid_argument("broadcast(): root rank out of range");
  std::uint64_t n = env.rank() == root ? value.size() : 0;
  polled_bcast(env, &n, 1, MPI_UINT64_T, root);
  std::string out = env.rank() == root ? value : std::string(n, '\0');
  if (n > 0) polled_bcast(env, out.data(), static_cast<int>(n), MPI_CHAR, root);
  return out;
}

bool all_on_one_host(MpiEnvironment& env) {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) throw std::runtime_error("cannot read the host name");
  // The maximum of h and of ~h: every hash is equal exactly when max(h) == ~max(~h).
  const std::uint64_t h = std::hash<std::string>{}(name);
  std::uint64_t mine[2] = {h, ~h}, most[2] = {0, 0};
  MPI_Request req = MPI_REQUEST_NULL;
  int rc;
  {
    std::lock_guard lock(*env.mutex());
    rc = MPI_Iallreduce(mine, most, 2, MPI_UINT64_T, MPI_MAX, env.comm(), &req);
  }
  env.wait_polled(req, rc, "MPI_Iallreduce");
  return most[0] == ~most[1];
}

std::string default_tcp_host(MpiEnvironment& env) {
  return all_on_one_host(env) ? "127.0.0.1" : comm::host_name_address();
}

}  // namespace taskwire::comm::mpi
