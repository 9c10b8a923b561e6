#include "bench/rank_pair.hpp"

#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/comm/mpi/mpi_broadcast.hpp>

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace taskwire::bench {
namespace {
constexpr int kStringTag = 90;  // on MPI_COMM_WORLD, apart from the runtime's private comm
}

RankPair::RankPair(const std::string& usage) {
  if (env_.size() < 2)
    throw std::runtime_error("needs two MPI ranks (rank 0 measures, rank 1 serves): mpiexec.mpich -n 2 " + usage);
  tcp_host_ = mpi::default_tcp_host(env_);
  auto cfg = runtime::Config::from_env();
  cfg.role = measures() ? "bench-client" : "bench-server";
  ctx_ = std::make_unique<runtime::Context>(cfg, 1);
  registry_ = std::make_unique<comm::Registry>(*ctx_);
  comm::register_builtin_backends(*registry_);
  ctx_->start();
  env_.barrier();
}

RankPair::~RankPair() {
  listeners_.clear();
  if (ctx_) ctx_->stop();
}

std::string RankPair::pass_string(int from, int to, const std::string& s) {
  if (rank() == from) {
    std::lock_guard lock(*env_.mutex());
    MPI_Send(s.data(), static_cast<int>(s.size()), MPI_CHAR, to, kStringTag, MPI_COMM_WORLD);
    return s;
  }
  if (rank() != to) return {};
  // A matched probe, polled with a sleep: no rank sits spinning in a blocking MPI call.
  MPI_Message msg = MPI_MESSAGE_NULL;
  MPI_Status status;
  for (int found = 0; !found;) {
    {
      std::lock_guard lock(*env_.mutex());
      MPI_Improbe(from, kStringTag, MPI_COMM_WORLD, &found, &msg, &status);
    }
    if (!found) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  int n = 0;
  MPI_Get_count(&status, MPI_CHAR, &n);
  std::string out(static_cast<std::size_t>(n), '\0');
  std::lock_guard lock(*env_.mutex());
  MPI_Mrecv(out.data(), n, MPI_CHAR, &msg, MPI_STATUS_IGNORE);
  return out;
}

std::string RankPair::listen_on_server(const std::string& where,
                                       std::function<void(comm::CommPtr)> on_accept) {
  std::string contact;
  if (serves()) {
    listeners_.push_back(comm::listen(*registry_, where, std::move(on_accept)));
    contact = listeners_.back()->contact_address();
  }
  return pass_string(1, 0, contact);
}

void RankPair::finish() {
  listeners_.clear();
  env_.barrier();
  ctx_->stop();
}

}  // namespace taskwire::bench
