#pragma once
#include "bench/latency.hpp"
#include "bench/pingpong.hpp"

#include <functional>
#include <string>
#include <vector>

namespace taskwire::bench {

struct LatencyRow {
  std::string backend;
  std::size_t bytes;
  std::vector<double> samples;  ///< round trips in us (idle rows: one CPU percentage)
};
using PlanFor = std::function<PingPongPlan(std::size_t)>;

bool launched_by_mpiexec();
using LatencyReport = std::function<void(const std::vector<LatencyRow>&)>;
/// The latency comparison between ranks 0 and 1 of an mpiexec launch. Rank 0 hands its rows to
/// `report` before MPI is finalised: MPICH with UCX over TCP may hang in MPI_Finalize, and the
/// figures are kept even then.
void run_latency_mpi(const LatencyOptions& options, const PlanFor& plan_for, const LatencyReport& report);

}  // namespace taskwire::bench
