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
/// The latency comparison between ranks 0 and 1 of an mpiexec launch; rows on rank 0 only.
std::vector<LatencyRow> run_latency_mpi(const LatencyOptions& options, const PlanFor& plan_for);

}  // namespace taskwire::bench
