#pragma once
// What the comm conformance suite needs from a scheme. The suite (conformance.cpp) runs
// unchanged over every scheme; each scheme supplies one SchemeFixture.
//
// Single-process schemes (inproc, tcp) connect to their own listener. Under mpiexec every
// rank runs the same test at once: each rank listens at its own address and its client
// connects to the next rank's listener, so each rank's server serves the previous rank's
// client, and sync() keeps the ranks on the same test.
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/runtime/context.hpp>

#include <memory>
#include <string>

namespace taskwire::test {

class SchemeFixture {
 public:
  virtual ~SchemeFixture() = default;
  virtual std::string scheme() const = 0;
  /// Where this process's test server listens.
  virtual std::string listen_address() = 0;
  /// Where this process's client connects, given this process's started listener.
  virtual std::string target(const comm::Listener& own_listener) = 0;
  /// An address on this scheme where nothing listens (during the test calling it).
  virtual std::string unreachable_address() = 0;
  /// Keeps all processes of the test on the same test case (no-op in one process).
  virtual void sync() {}
  runtime::Context& context() { return *context_; }
  comm::Registry& registry() { return *registry_; }

 protected:
  std::unique_ptr<runtime::Context> context_;
  std::unique_ptr<comm::Registry> registry_;
};

/// A started two-thread context for `role` and its registry with the built-in backends;
/// `with_tls`: this process's certificates are the test CA's (mutual TLS with itself).
void make_runtime(std::unique_ptr<runtime::Context>& ctx, std::unique_ptr<comm::Registry>& reg,
                  const std::string& role, bool with_tls = false);

/// Runs a test body between two sync()s, so MPI ranks stay on the same test.
struct Synced {
  SchemeFixture& fx;
  explicit Synced(SchemeFixture& f) : fx(f) { fx.sync(); }
  ~Synced() { fx.sync(); }
  Synced(const Synced&) = delete;
  Synced& operator=(const Synced&) = delete;
};

/// The fixture for $TASKWIRE_TEST_SCHEME (default "inproc"); created on first use.
SchemeFixture& fixture();

/// Provided by tests/comm/mpi/mpi_fixture.cpp in MPI test binaries only.
std::unique_ptr<SchemeFixture> make_mpi_fixture();

}  // namespace taskwire::test

namespace taskwire::test {
std::string& selected_scheme();     ///< from --scheme (tests/test_main.cpp)
extern void (*teardown_hook)();     ///< run after all tests, before exit
}  // namespace taskwire::test
