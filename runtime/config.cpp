#include <taskwire/runtime/config.hpp>

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <unistd.h>

namespace taskwire::runtime {
namespace {

template <class T>
void overlay(const char* var, T& out) {
  const char* v = std::getenv(var);
  if (!v || !*v) return;
  std::string_view s{v};
  std::uint64_t parsed = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), parsed);
  if (ec != std::errc{} || p != s.data() + s.size())
    throw std::invalid_argument(std::string(var) + "='" + v + "' is not a non-negative integer");
  out = static_cast<T>(parsed);
}

}  // namespace

Config Config::from_env() {
  Config c;
  c.name = "pid-" + std::to_string(::getpid());
  if (const char* t = std::getenv("TASKWIRE_AUTH_TOKEN")) c.auth_token = t;
  std::uint64_t ms = c.connect_timeout.count();
  overlay("TASKWIRE_CONNECT_TIMEOUT_MS", ms);
  c.connect_timeout = std::chrono::milliseconds(ms);
  overlay("TASKWIRE_MPI_SPIN_POLLS", c.mpi.spin_polls);
  std::uint64_t cap = c.mpi.sleep_cap.count();
  overlay("TASKWIRE_MPI_SLEEP_CAP_US", cap);
  c.mpi.sleep_cap = std::chrono::microseconds(cap);
  if (std::getenv("TASKWIRE_MPI_SPIN_US")) {
    std::uint64_t spin = 0;
    overlay("TASKWIRE_MPI_SPIN_US", spin);
    c.mpi.spin_after_progress = std::chrono::microseconds(spin);
  }
  std::uint64_t yield = c.mpi.yield_after_progress.count();
  overlay("TASKWIRE_MPI_YIELD_US", yield);
  c.mpi.yield_after_progress = std::chrono::microseconds(yield);
  overlay("TASKWIRE_MAX_FRAME_BYTES", c.limits.max_frame_bytes);
  overlay("TASKWIRE_MAX_MESSAGE_BYTES", c.limits.max_message_bytes);
  overlay("TASKWIRE_MAX_QUEUED_BYTES", c.limits.max_queued_bytes);
  return c;
}

}  // namespace taskwire::runtime
