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

/// Applies a PingPongPlan to timed round trips, whatever makes them: drops the warm-up ones,
/// keeps the others (in microseconds), and says when the measurement is complete
/// (max_iterations, or min_iterations once the time budget is spent).
class RoundTripSampler {
 public:
  using Clock = std::chrono::steady_clock;
  explicit RoundTripSampler(const PingPongPlan& plan) : plan_(plan) {}
  /// Records the round trip [t0, t1]; true when no more are needed.
  bool record(Clock::time_point t0, Clock::time_point t1);
  std::vector<double>& samples() noexcept { return samples_; }

 private:
  PingPongPlan plan_;
  std::vector<double> samples_;
  std::size_t seen_ = 0;
  Clock::time_point start_;
};

class RawTcpSocket;
/// ping_pong over a raw blocking socket (the baseline), same plan and sampling.
std::vector<double> raw_tcp_ping_pong(RawTcpSocket& socket, const PingPongPlan& plan);

/// Round-trip times in microseconds. Blocks the calling thread (not a context thread) until
/// done. Throws comm::CommError if the comm fails.
std::vector<double> ping_pong(const comm::CommPtr& comm, const PingPongPlan& plan);

/// Serves ping_pong: echoes every message back until the comm closes.
void echo_forever(const comm::CommPtr& comm);

/// A stream of `count` messages one way, then a one-frame ack back; returns seconds.
double stream_one_way(const comm::CommPtr& comm, std::size_t bytes, std::size_t count);

}  // namespace taskwire::bench
