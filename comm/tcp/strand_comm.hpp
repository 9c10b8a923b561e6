#pragma once
// What the byte-stream comms (TcpComm, TlsComm) share: all state confined to the comm's
// strand, and the way a call reaches it. A public call made on the strand runs at once; from
// any other thread it is posted to the strand, holding the comm. Every handler of the comm
// runs as a "turn": write handlers whose message went out at once are deferred to the end of
// the turn, so they never run inside async_write, yet cost no trip through the reactor
// (what keeps a small round trip close to a raw socket's).
//
// Derived (CRTP, so no virtual call is added to a turn) provides, each run on the strand:
// start_read(ReadHandler), start_write(Message, WriteHandler), start_close(), and
// fail(error_code, Side) that ends the comm.
#include <taskwire/comm/core/comm.hpp>
#include <taskwire/comm/core/framing.hpp>
#include <taskwire/comm/core/held_handlers.hpp>
#include <taskwire/runtime/config.hpp>

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace taskwire::comm::tcp {

using Strand = asio::strand<asio::io_context::executor_type>;

/// Which operation hit an error: it gets that error, the others a generic one.
enum class Side { read, write };

template <class Derived>
class StrandComm : public Comm, public std::enable_shared_from_this<Derived> {
 public:
  void async_read(ReadHandler handler) override {
    run_on_strand([this, h = std::move(handler)]() mutable {
      HeldHandlers::track_once(*this, tracked_);
      derived().start_read(std::move(h));
    });
  }
  void async_write(Message message, WriteHandler handler) override {
    run_on_strand([this, m = std::move(message), h = std::move(handler)]() mutable {
      HeldHandlers::track_once(*this, tracked_);
      derived().start_write(std::move(m), std::move(h));
    });
  }
  void close() override {
    closed_flag_ = true;
    run_on_strand([this] { derived().start_close(); });
  }
  void abort() noexcept override {
    closed_flag_ = true;
    try {
      run_on_strand([this] { derived().fail(make_error_code(errc::aborted), Side::read); });
    } catch (...) {
      // No owner left (called from a destructor) or no memory: the socket closes with us.
    }
  }
  bool closed() const noexcept override { return closed_flag_.load(); }
  std::uint64_t bytes_received() const noexcept override { return bytes_received_.load(); }
  void set_read_limits(const runtime::Limits& limits) override {
    run_on_strand([this, limits] { read_limits_ = limits; });
  }
  std::string local_address() const override { return local_; }
  std::string peer_address() const override { return peer_addr_; }
  asio::any_io_executor executor() const override { return strand_; }
  void drop_held_handlers() noexcept override {
    auto read = std::exchange(pending_read_, nullptr);
    auto deferred = std::exchange(deferred_, {});
    std::vector<WriteHandler> writes;
    for (auto& w : derived().writes_) writes.push_back(std::exchange(w.handler, nullptr));
  }

 protected:
  /// `scheme` ("tcp", "tls") starts the comm's log lines.
  StrandComm(const char* scheme, Strand strand, const runtime::Limits& limits)
      : limits_(limits), read_limits_(limits), strand_(std::move(strand)), scheme_(scheme) {}

  // Inline when called on the strand with nothing of ours queued there; otherwise behind what
  // is queued. Inline while an earlier call waits in the strand's queue would reorder this
  // comm's operations: the scheduler writes to worker A from A's read handler (on A's strand)
  // while a message it wrote to A from B's handler is still queued, and A received a
  // compute_task's later assignment before the earlier one (seen as a task the scheduler
  // believed running that A had dropped).
  template <class F>
  void run_on_strand(F&& f) {
    if (strand_.running_in_this_thread() && queued_ == 0) return f();
    ++queued_;
    asio::post(strand_, [self = this->shared_from_this(), f = std::forward<F>(f)]() mutable {
      --self->queued_;
      self->turn(f);
    });
  }

  // Runs body, then the write handlers it deferred.
  template <class F>
  void turn(F&& body) {
    if (in_turn_) return body();
    in_turn_ = true;
    try {
      body();
      run_deferred();
    } catch (...) {
      in_turn_ = false;
      if (!deferred_.empty()) schedule_flush();
      throw;
    }
    in_turn_ = false;
  }

  // A write's success, its message handed to the transport: at the end of the current turn,
  // or posted when called on the strand from outside this comm's turns.
  void complete_write(WriteHandler h) {
    if (!h) return;
    if (in_turn_) deferred_.push_back(std::move(h));
    else post_handler(std::move(h), {});
  }

  void post_handler(ReadHandler h, error_code ec) {
    asio::post(strand_, [h = std::move(h), ec] { h(ec, Message{}); });
  }
  void post_handler(WriteHandler h, error_code ec) {
    if (h) asio::post(strand_, [h = std::move(h), ec] { h(ec); });
  }

  // False after posting `h` its error when the write cannot be queued: the comm has ended
  // (`ended`: failed, closing, or the peer gone), or the message is past what this end
  // agreed to send.
  bool may_queue_write(const Message& message, WriteHandler& h, bool ended) {
    if (failed_ || ended) {
      post_handler(std::move(h), later_error());
      return false;
    }
    if (auto why = check_limits(message, limits_); !why.empty()) {
      spdlog::warn("{}: not sending a message to {}: {}", scheme_, peer_addr_, why);
      post_handler(std::move(h), make_error_code(errc::protocol));
      return false;
    }
    return true;
  }

  /// `code`: errc::tls when the peer turned out to speak TLS (framing.hpp's tls_record).
  void protocol_violation(const std::string& text, errc code = errc::protocol) {
    spdlog::warn("{}: protocol error from {}: {}; aborting this comm", scheme_, peer_addr_, text);
    derived().fail(make_error_code(code), Side::read);
  }

  // The start of close(): false when the comm has ended or is closing already; else marks it
  // closing and ends the pending read with errc::closed.
  bool begin_close() {
    if (failed_ || close_requested_) return false;
    close_requested_ = true;
    closed_flag_ = true;
    if (pending_read_)
      post_handler(std::exchange(pending_read_, nullptr), make_error_code(errc::closed));
    return true;
  }

  // The start of fail(): false when the comm has failed already; else marks it failed with
  // what the other operations are to get (failed_: closed when the peer is gone, else
  // aborted) and ends the pending read, with `cause` when the read is what hit it.
  bool begin_fail(error_code cause, Side side) {
    if (failed_) return false;
    failed_ = make_error_code(cause == errc::closed ? errc::closed : errc::aborted);
    closed_flag_ = true;
    if (pending_read_)
      post_handler(std::exchange(pending_read_, nullptr), side == Side::read ? cause : failed_);
    return true;
  }

  // What an operation started after the comm ended fails with.
  error_code later_error() const {
    if (failed_) return failed_;
    return make_error_code(errc::closed);
  }

  const runtime::Limits limits_;  // what this end agrees to send
  runtime::Limits read_limits_;   // what it accepts (strand only)
  Strand strand_;
  std::string local_, peer_addr_;
  std::atomic<bool> closed_flag_{false};
  std::atomic<std::uint64_t> bytes_received_{0};
  error_code failed_;  // set once the comm is dead: what later operations fail with
  ReadHandler pending_read_;
  bool close_requested_ = false;  // close(): no new operations, flush the writes, then end

 private:
  Derived& derived() { return static_cast<Derived&>(*this); }

  void run_deferred() {
    while (!deferred_.empty()) {
      auto h = std::move(deferred_.front());
      deferred_.pop_front();
      h({});
    }
  }

  void schedule_flush() {
    asio::post(strand_, [self = this->shared_from_this()] { self->turn([] {}); });
  }

  const char* scheme_;
  std::deque<WriteHandler> deferred_;  // to run at the end of the current turn
  bool in_turn_ = false;               // one of this comm's handlers is running
  bool tracked_ = false;               // by HeldHandlers
  std::atomic<int> queued_{0};         // run_on_strand calls posted and not yet run
};

}  // namespace taskwire::comm::tcp
