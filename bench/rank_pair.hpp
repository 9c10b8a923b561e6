#pragma once
// Set-up for benchmarks measured between ranks 0 and 1 of an `mpiexec.mpich -n 2` (or more)
// launch: rank 0 measures, rank 1 serves, ranks 2.. stay idle with the runtime up. Every rank
// builds the same runtime (MpiEnvironment, a one-thread Context, a comm::Registry with the
// built-in backends), so each backend runs between the same two processes in one launch.
// (latency_mpi.cpp has its own copy of this set-up; it can move onto RankPair.)
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/comm/mpi/mpi_environment.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace taskwire::bench {

class RankPair {
 public:
  /// Collective. Throws std::runtime_error with fewer than 2 ranks; `usage` (e.g.
  /// "taskwire-bench bandwidth") goes into the message.
  explicit RankPair(const std::string& usage);
  ~RankPair();  ///< drops the listeners and stops the context (no collective call)
  RankPair(const RankPair&) = delete;
  RankPair& operator=(const RankPair&) = delete;

  mpi::MpiEnvironment& env() noexcept { return env_; }
  comm::Registry& registry() noexcept { return *registry_; }
  int rank() const noexcept { return env_.rank(); }
  bool measures() const noexcept { return rank() == 0; }
  bool serves() const noexcept { return rank() == 1; }

  /// Collective (polled, under the runtime's MPI mutex): `s` as given on rank `from` is
  /// returned on `from` and `to`; other ranks get "".
  std::string pass_string(int from, int to, const std::string& s);

  /// Collective: rank 1 listens at `where` ("mpi://1", "tcp://127.0.0.1:0") and hands every
  /// accepted comm to `on_accept` (on the comm's executor); returns the contact address on
  /// ranks 0 and 1. The listener lives until finish() or destruction.
  std::string listen_on_server(const std::string& where, std::function<void(comm::CommPtr)> on_accept);

  /// Where this rank's TCP listeners bind: 127.0.0.1 when both ranks share a host, else its
  /// host's address (mpi::default_tcp_host, found once at construction).
  const std::string& tcp_host() const noexcept { return tcp_host_; }

  /// Collective polled barrier over every rank.
  void barrier() { env_.barrier(); }

  /// Collective orderly end: drops the listeners, waits for every rank, stops the context.
  void finish();

 private:
  mpi::MpiEnvironment env_;
  std::string tcp_host_;
  std::unique_ptr<runtime::Context> ctx_;
  std::unique_ptr<comm::Registry> registry_;
  std::vector<std::unique_ptr<comm::Listener>> listeners_;
};

}  // namespace taskwire::bench
