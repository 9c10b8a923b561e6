#include <taskwire/runtime/mpi_broadcast.hpp>

#include <cstdint>
#include <stdexcept>

namespace taskwire::runtime {
namespace {

// One polled MPI_Ibcast, sleeping with the idle backoff between tests.
void polled_bcast(MpiEnvironment& env, void* data, int count, MPI_Datatype type, int root) {
  MPI_Request req;
  int rc;
  {
    std::lock_guard lock(*env.mutex());
    rc = MPI_Ibcast(data, count, type, root, env.comm(), &req);
  }
  MpiBackoff backoff(Config::from_env().mpi);
  for (int done = 0; rc == MPI_SUCCESS && !done;) {
    {
      std::lock_guard lock(*env.mutex());
      rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
    if (!done) backoff.sleep();
  }
  if (rc != MPI_SUCCESS)
    throw std::runtime_error("MPI_Ibcast failed: " + MpiEnvironment::error_string(rc));
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

}  // namespace taskwire::runtime
