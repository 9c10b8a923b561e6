#pragma once
// Ping-pong measurement through the Comm interface, driven by handlers on the comm's own
// executor (no thread hand-off per message, so what is measured is the comm layer).
#include <taskwire/comm/core/comm.hpp>

#include <chrono>
#include <cstddef>
#include <vector>

namespace taskwire::bench {

struct PingPongPlan {
  std::size_t bytes = 8;
  std::size_t warmup = 20;
  std::size_t max_iterations = 10'000;
  std::size_t min_iterations = 10;
  std::chrono::milliseconds budget{400};  ///< stop after this (but not before min_iterations)
};

/// Round-trip times in microseconds. Blocks the calling thread (not a context thread) until
/// done. Throws comm::CommError if the comm fails.
std::vector<double> ping_pong(const comm::CommPtr& comm, const PingPongPlan& plan);

/// Serves ping_pong: echoes every message back until the comm closes.
void echo_forever(const comm::CommPtr& comm);

/// A stream of `count` messages one way, then a one-frame ack back; returns seconds.
double stream_one_way(const comm::CommPtr& comm, std::size_t bytes, std::size_t count);

}  // namespace taskwire::bench
