#pragma once
// A fake scheduler for worker server tests: listens with comm::listen, hands each accepted
// comm to the test as a Mailbox that keeps reading and decoding the worker's operations, and
// lets the test send protocol batches written with BatchWriter. Every wait is bounded.
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/batch.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace taskwire::worker::testing {

using namespace std::chrono_literals;
using protocol::Op;

/// One operation the worker sent, decoded.
struct ReceivedOp {
  Op op{};
  protocol::RegisterWorker registered;
  protocol::TaskFinished finished;
  protocol::TaskErred erred;
  protocol::MissingData missing;
  protocol::Heartbeat heartbeat;
  std::vector<runtime::Frame> frames;  ///< the operation's payload (an inline result)
};

/// One accepted comm, read continuously on its own strand.
class Mailbox : public std::enable_shared_from_this<Mailbox> {
 public:
  explicit Mailbox(comm::CommPtr c) : comm(std::move(c)) {}

  void start() { read(); }

  /// Removes and returns the first operation `op` received, waiting up to `timeout`.
  std::optional<ReceivedOp> next(Op op, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    std::optional<ReceivedOp> found;
    cv_.wait_for(lock, timeout, [&] {
      for (auto it = ops_.begin(); it != ops_.end(); ++it) {
        if (it->op == op) {
          found = *it;
          ops_.erase(it);
          return true;
        }
      }
      return false;
    });
    return found;
  }
  /// True once the comm's read failed (the worker closed or aborted it).
  bool wait_ended(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return ended_; });
  }
  error_code end_code() {
    std::lock_guard lock(mu_);
    return end_;
  }
  std::size_t messages() {
    std::lock_guard lock(mu_);
    return messages_;
  }
  std::string malformed() {
    std::lock_guard lock(mu_);
    return malformed_;
  }
  void send(runtime::Message m) { comm->async_write(std::move(m), [](error_code) {}); }

  comm::CommPtr comm;

 private:
  void read() {
    // Weak: the comm holds its pending handler and this holds the comm (no cycle).
    std::weak_ptr<Mailbox> weak = shared_from_this();
    comm->async_read([weak](error_code ec, runtime::Message m) {
      auto self = weak.lock();
      if (!self) return;
      std::unique_lock lock(self->mu_);
      if (ec) {
        self->ended_ = true;
        self->end_ = ec;
        self->cv_.notify_all();
        return;
      }
      ++self->messages_;
      try {
        runtime::for_each_op(m, [&](runtime::OpReader& r) {
          ReceivedOp op;
          op.op = r.op();
          op.frames.assign(r.frames().begin(), r.frames().end());
          switch (r.op()) {
            case Op::register_worker: op.registered = r.body<protocol::RegisterWorker>(); break;
            case Op::task_finished: op.finished = r.body<protocol::TaskFinished>(); break;
            case Op::task_erred: op.erred = r.body<protocol::TaskErred>(); break;
            case Op::missing_data: op.missing = r.body<protocol::MissingData>(); break;
            case Op::heartbeat: op.heartbeat = r.body<protocol::Heartbeat>(); break;
            default: r.body<protocol::Empty>(); break;  // worker_closing
          }
          self->ops_.push_back(std::move(op));
        });
      } catch (const std::exception& e) {
        self->malformed_ = e.what();  // checked by the test thread (Catch is not thread-safe)
      }
      self->cv_.notify_all();
      lock.unlock();
      self->read();
    });
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ReceivedOp> ops_;
  std::size_t messages_ = 0;
  bool ended_ = false;
  error_code end_;
  std::string malformed_;
};

class FakeScheduler {
 public:
  FakeScheduler(comm::Registry& registry, const std::string& listen_address)
      : st_(std::make_shared<State>()) {
    comm::ListenOptions options;
    comm::HandshakeOptions hs = comm::HandshakeOptions::from(registry.context().config());
    hs.role = "scheduler";
    hs.name = "fake-scheduler";
    options.handshake = hs;
    listener_ = comm::listen(
        registry, listen_address,
        [st = st_](comm::CommPtr c) {
          auto box = std::make_shared<Mailbox>(std::move(c));
          box->start();
          std::lock_guard lock(st->mu);
          st->accepted.push_back(box);
          st->all.push_back(box);
          st->cv.notify_all();
        },
        std::move(options));
  }
  ~FakeScheduler() {
    listener_.reset();
    std::lock_guard lock(st_->mu);
    for (auto& b : st_->all) b->comm->abort();
  }

  std::string address() const { return listener_->contact_address(); }

  /// The next comm a worker opened, waiting up to `timeout`.
  std::shared_ptr<Mailbox> accept(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(st_->mu);
    REQUIRE(st_->cv.wait_for(lock, timeout, [&] { return !st_->accepted.empty(); }));
    auto box = st_->accepted.front();
    st_->accepted.pop_front();
    return box;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<Mailbox>> accepted;
    std::vector<std::shared_ptr<Mailbox>> all;
  };
  std::shared_ptr<State> st_;
  std::unique_ptr<comm::Listener> listener_;
};

/// A compute_task batch: `function` on `args`; ArgSpec::frame arguments index `frames`.
inline void add_compute(runtime::BatchWriter& w, std::string key, std::string function,
                        std::vector<protocol::ArgSpec> args, std::vector<runtime::Frame> frames,
                        protocol::WhoHas who_has = {}, std::int64_t priority = 0) {
  protocol::ComputeTask ct;
  ct.spec.key = std::move(key);
  ct.spec.function = std::move(function);
  ct.spec.args = std::move(args);
  for (const auto& a : ct.spec.args)
    if (a.kind == protocol::ArgSpec::dependency) ct.spec.dependencies.push_back(a.key);
  ct.spec.priority = priority;
  ct.who_has = std::move(who_has);
  w.add(Op::compute_task, ct, std::move(frames));
}

inline protocol::ArgSpec frame_arg(std::uint32_t index) {
  return {protocol::ArgSpec::frame, index, ""};
}
inline protocol::ArgSpec dep_arg(std::string key) {
  return {protocol::ArgSpec::dependency, 0, std::move(key)};
}

}  // namespace taskwire::worker::testing
