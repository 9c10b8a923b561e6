#include "bench/pingpong.hpp"

#include "bench/raw_tcp.hpp"

#include <future>
#include <memory>

namespace taskwire::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct PingPong : std::enable_shared_from_this<PingPong> {
  comm::CommPtr comm;
  RoundTripSampler sampler;
  runtime::Message message;
  Clock::time_point t0;

  explicit PingPong(const PingPongPlan& plan) : sampler(plan) {}
  std::promise<void> finished;

  void next() {
    t0 = Clock::now();
    auto self = shared_from_this();
    comm->async_write(message, [self](error_code ec) {
      if (ec) self->fail(ec);
    });
    comm->async_read([self](error_code ec, runtime::Message) {
      if (ec) return self->fail(ec);
      self->on_reply();
    });
  }

  void on_reply() {
    if (sampler.record(t0, Clock::now())) return finished.set_value();
    next();
  }

  void fail(error_code ec) {
    try {
      finished.set_exception(std::make_exception_ptr(comm::CommError(ec, "ping-pong: " + ec.message())));
    } catch (const std::future_error&) {
    }
  }
};

void echo_loop(comm::CommPtr comm) {
  comm->async_read([comm](error_code ec, runtime::Message m) {
    if (ec) return;
    comm->async_write(std::move(m), [](error_code) {});
    echo_loop(comm);
  });
}

}  // namespace

bool RoundTripSampler::record(Clock::time_point t0, Clock::time_point t1) {
  if (seen_++ < plan_.warmup) {
    start_ = t1;  // the budget starts after the last warm-up round trip
    return false;
  }
  if (samples_.empty() && plan_.warmup == 0) start_ = t0;
  samples_.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  return samples_.size() >= plan_.max_iterations ||
         (samples_.size() >= plan_.min_iterations && t1 - start_ > plan_.budget);
}

std::vector<double> raw_tcp_ping_pong(RawTcpSocket& socket, const PingPongPlan& plan) {
  RoundTripSampler sampler(plan);
  std::vector<char> message(plan.bytes, 'x'), reply;
  for (;;) {
    const auto t0 = Clock::now();
    socket.send_message(message);
    socket.recv_message(reply);
    if (sampler.record(t0, Clock::now())) return std::move(sampler.samples());
  }
}

std::vector<double> ping_pong(const comm::CommPtr& comm, const PingPongPlan& plan) {
  auto op = std::make_shared<PingPong>(plan);
  op->comm = comm;
  auto frame = runtime::Frame::allocate(plan.bytes);
  for (std::size_t i = 0; i < plan.bytes; ++i) frame.mutable_data()[i] = static_cast<char>(i);
  op->message = runtime::Message({frame});
  auto fut = op->finished.get_future();
  asio::post(comm->executor(), [op] { op->next(); });
  fut.get();
  return std::move(op->sampler.samples());
}

void echo_forever(const comm::CommPtr& comm) { echo_loop(comm); }

double stream_one_way(const comm::CommPtr& comm, std::size_t bytes, std::size_t count) {
  auto frame = runtime::Frame::allocate(bytes);
  runtime::Message m({frame});
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < count; ++i) comm->async_write(m, [](error_code) {});
  comm->async_read([done](error_code ec, runtime::Message) {
    if (ec) done->set_exception(std::make_exception_ptr(comm::CommError(ec, "stream ack")));
    else done->set_value();
  });
  fut.get();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace taskwire::bench
