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

template <class Rep, class Period>
void overlay(const char* var, std::chrono::duration<Rep, Period>& out) {
  std::uint64_t count = static_cast<std::uint64_t>(out.count());
  overlay(var, count);
  out = std::chrono::duration<Rep, Period>(static_cast<Rep>(count));
}

}  // namespace

Config Config::from_env() {
  Config c;
  c.name = "pid-" + std::to_string(::getpid());
  if (const char* t = std::getenv("TASKWIRE_AUTH_TOKEN")) c.auth_token = t;
  if (const char* f = std::getenv("TASKWIRE_TLS_CA_FILE")) c.tls_ca_file = f;
  if (const char* f = std::getenv("TASKWIRE_TLS_CERT")) c.tls_cert_file = f;
  if (const char* f = std::getenv("TASKWIRE_TLS_KEY")) c.tls_key_file = f;
  overlay("TASKWIRE_CONNECT_TIMEOUT_MS", c.connect_timeout);
  overlay("TASKWIRE_HANDSHAKE_TIMEOUT_MS", c.handshake_timeout);
  std::uint64_t yield = c.mpi.yield_after_progress.count();
  overlay("TASKWIRE_MPI_YIELD_US", yield);
  c.mpi.yield_after_progress = std::chrono::microseconds(yield);
  overlay("TASKWIRE_MAX_MESSAGE_BYTES", c.limits.max_message_bytes);
  overlay("TASKWIRE_MAX_QUEUED_BYTES", c.limits.max_queued_bytes);
  return c;
}

}  // namespace taskwire::runtime
