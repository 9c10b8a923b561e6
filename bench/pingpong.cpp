#include "bench/pingpong.hpp"

#include <future>
#include <memory>

namespace taskwire::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct PingPong : std::enable_shared_from_this<PingPong> {
  comm::CommPtr comm;
  PingPongPlan plan;
  runtime::Message message;
  std::vector<double> samples;
  std::size_t done = 0;
  Clock::time_point start, t0;
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
    const auto t1 = Clock::now();
    if (done >= plan.warmup) samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    else if (done + 1 == plan.warmup) start = t1;
    ++done;
    const auto measured = samples.size();
    const bool out_of_time = done > plan.warmup && t1 - start > plan.budget;
    if (measured >= plan.max_iterations || (measured >= plan.min_iterations && out_of_time)) {
      finished.set_value();
      return;
    }
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

std::vector<double> ping_pong(const comm::CommPtr& comm, const PingPongPlan& plan) {
  auto op = std::make_shared<PingPong>();
  op->comm = comm;
  op->plan = plan;
  if (plan.warmup == 0) op->start = Clock::now();
  auto frame = runtime::Frame::allocate(plan.bytes);
  for (std::size_t i = 0; i < plan.bytes; ++i) frame.mutable_data()[i] = static_cast<char>(i);
  op->message = runtime::Message({frame});
  auto fut = op->finished.get_future();
  asio::post(comm->executor(), [op] { op->next(); });
  fut.get();
  return std::move(op->samples);
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
