#include <taskwire/comm/tls/tls_comm.hpp>

#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/framing.hpp>
#include <taskwire/comm/tls/tls_error.hpp>

#include <openssl/err.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace taskwire::comm::tls {
namespace {

// A reader whose peer keeps the socket full could decrypt for as long as the peer sends;
// past this many bytes in one go it lets the strand's other handlers (its own writer's, on a
// busy loop other comms') run before it goes on.
constexpr std::size_t kReadTurnBytes = 1024 * 1024;

}  // namespace

std::string format_endpoint(const asio::ip::tcp::endpoint& endpoint) {
  return "tls://" + HostPort{endpoint.address().to_string(), endpoint.port()}.str();
}

TlsComm::TlsComm(std::unique_ptr<TlsStream> stream, const runtime::Limits& limits)
    : StrandComm("tls", stream->socket.get_executor(), limits), stream_(std::move(stream)) {
  read_through_buffer(ssl());
  auto& socket = stream_->socket;
  tcp::set_socket_options(socket, "tls");
  error_code ec;
  const auto local = socket.local_endpoint(ec);
  local_ = ec ? std::string("tls://?") : format_endpoint(local);
  const auto remote = socket.remote_endpoint(ec);
  peer_addr_ = ec ? std::string("tls://?") : format_endpoint(remote);
}

TlsComm::~TlsComm() = default;

// ---- waiting for the socket ----

bool& TlsComm::waiting(Waiter who) {
  if (who == Waiter::read) return read_waiting_;
  return who == Waiter::write ? write_waiting_ : close_waiting_;
}

// Input is waited for with a socket read into the session's buffer (tls_io.hpp,
// read_through_buffer), shared by whoever needs it; writability with an async_wait.
void TlsComm::wait(SslOutcome outcome, Waiter who) {
  waiting(who) = true;
  if (outcome.kind == SslOutcome::want_read) {
    input_waiters_ |= 1u << static_cast<unsigned>(who);
    return read_socket();
  }
  stream_->socket.async_wait(wait_for(outcome),
                             [self = shared_from_this(), who](const error_code& ec) {
                               self->turn([&] { self->on_ready(who, ec); });
                             });
}

void TlsComm::read_socket() {
  if (socket_reading_) return;
  socket_reading_ = true;
  const auto space = input_space(ssl());
  stream_->socket.async_read_some(
      asio::buffer(space.data(), space.size()),
      [self = shared_from_this()](const error_code& ec, std::size_t n) {
        self->turn([&] { self->on_input(ec, n); });
      });
}

// What the socket read brought (or how it ended) goes to the session; then everyone who
// waited for input goes on: close and the writer before the reader, whose delivery may
// start more work.
void TlsComm::on_input(const error_code& ec, std::size_t n) {
  socket_reading_ = false;
  if (failed_ || socket_closed_) return;
  if (ec) input_failed(ssl(), ec);
  else input_received(ssl(), n);
  const unsigned waiters = std::exchange(input_waiters_, 0u);
  for (Waiter who : {Waiter::close, Waiter::write, Waiter::read})
    if (waiters & (1u << static_cast<unsigned>(who))) on_ready(who, {});
}

void TlsComm::on_ready(Waiter who, const error_code& ec) {
  waiting(who) = false;
  if (failed_ || socket_closed_) return;
  if (ec) {
    const auto code = tcp::translate_error(ec, peer_addr_);
    if (who != Waiter::close) return fail(code, who == Waiter::read ? Side::read : Side::write);
    return close_socket();
  }
  if (who == Waiter::write) return send_queued();
  if (who == Waiter::read) {
    if (!close_requested_) advance();
    return;
  }
  if (!notify_sent_) finish_close();
  else drain();
}

// ---- read side ----

void TlsComm::start_read(ReadHandler h) {
  if (failed_ || close_requested_ || peer_eof_) return post_handler(std::move(h), later_error());
  if (pending_read_) return post_handler(std::move(h), make_error_code(errc::protocol));
  pending_read_ = std::move(h);
  if (read_waiting_) return;  // the wait's completion carries on
  starting_read_ = true;
  advance();
  starting_read_ = false;
}

void TlsComm::advance() {
  const std::uint64_t start = bytes_received_.load(std::memory_order_relaxed);
  while (pending_read_ && !failed_ && !read_waiting_ && !close_requested_) {
    std::span<char> into;
    if (reading_large_) {
      into = large_into_.subspan(large_filled_);
    } else {
      Message message;
      auto step = decoder_.next(read_limits_, message);
      if (step.kind == FrameDecoder::Step::message) return deliver(std::move(message));
      if (step.kind == FrameDecoder::Step::violation)
        return protocol_violation(step.violation_text);
      into = step.into;
      if (step.kind == FrameDecoder::Step::read_all) {
        reading_large_ = true;
        large_into_ = step.into;
        large_filled_ = 0;
      }
    }
    if (bytes_received_.load(std::memory_order_relaxed) - start >= kReadTurnBytes) {
      read_waiting_ = true;  // until the posted continuation runs
      asio::post(strand_, [self = shared_from_this()] {
        self->turn([&] { self->on_ready(Waiter::read, {}); });
      });
      return;
    }
    if (!read_into(into)) return;
  }
}

// One SSL_read into what the decoder asked for (a large frame's span is kept across waits).
bool TlsComm::read_into(std::span<char> into) {
  if (nothing_to_read(ssl())) {
    wait({SslOutcome::want_read, {}}, Waiter::read);
    return false;
  }
  std::size_t n = 0;
  clear_ssl_errors();
  const int ret = SSL_read_ex(ssl(), into.data(), into.size(), &n);
  if (ret == 1) {
    bytes_received_ += n;
    if (!reading_large_) {
      decoder_.received(n);
    } else if ((large_filled_ += n) == large_into_.size()) {
      reading_large_ = false;
      decoder_.large_received();
    }
    return true;
  }
  const auto outcome = ssl_outcome(ssl(), ret);
  if (outcome.kind == SslOutcome::failed) on_read_error(outcome.ec);
  else wait(outcome, Waiter::read);
  return false;
}

// A message found inside start_read (async_read's call) is posted: never run inside the call.
void TlsComm::deliver(Message message) {
  auto h = std::move(pending_read_);
  pending_read_ = nullptr;
  if (!starting_read_) return h({}, std::move(message));
  asio::post(strand_, [self = shared_from_this(), h = std::move(h),
                       m = std::move(message)]() mutable {
    self->turn([&] { h({}, std::move(m)); });
  });
}

void TlsComm::on_read_error(const error_code& ec) {
  const auto code = translate_tls_error(ec, X509_V_OK, false);
  if (code != errc::closed) {
    // A TLS refusal (an alert: under TLS 1.3 a server refuses a client's certificate after
    // the client's handshake, so it comes here) is said at warn level: the reader may only
    // pass on the code.
    if (code.category() == tls_category())
      spdlog::warn("tls: {} ended the connection: {}: {}", peer_addr_, ec.message(),
                   code.message());
    else
      spdlog::debug("tls: read from {} failed: {}", peer_addr_, ec.message());
    return fail(code, Side::read);
  }
  if (decoder_.partial() || reading_large_)
    return protocol_violation("the connection ended part-way through a message");
  // Part of a record came, so the peer was cut off sending (the next message, as likely).
  if (ec == asio::ssl::error::stream_truncated && SSL_has_pending(ssl()))
    return protocol_violation("the connection ended part-way through a TLS record");
  peer_eof_ = true;
  if (pending_read_) {
    auto h = std::move(pending_read_);
    pending_read_ = nullptr;
    if (starting_read_) post_handler(std::move(h), code);
    else h(code, Message{});
  }
}

// ---- write side ----

void TlsComm::start_write(Message message, WriteHandler h) {
  if (!may_queue_write(message, h, close_requested_ || peer_eof_)) return;
  writes_.push_back(PendingWrite{std::move(message), std::move(h)});
  if (!write_waiting_) send_queued();
}

// Sends the queued messages in order, each offered to SSL_write at once; one the socket does
// not take whole waits for it (write_front() left a wait) and goes on from where it stopped.
// Corked meanwhile (tls_io.hpp): the records go out together, flushed before returning.
void TlsComm::send_queued() {
  cork(ssl(), true);
  while (!writes_.empty() && !write_waiting_ && !failed_) {
    if (!write_front()) break;
    auto done = std::move(writes_.front());
    writes_.pop_front();
    pieces_.clear();
    complete_write(std::move(done.handler));
  }
  cork(ssl(), false);
  if (failed_ || write_waiting_) return;
  const auto flushed = flush(ssl());
  if (flushed.kind == SslOutcome::want_write) return wait(flushed, Waiter::write);
  if (flushed.kind == SslOutcome::failed) {
    spdlog::debug("tls: write to {} failed: {}", peer_addr_, flushed.ec.message());
    return fail(translate_tls_error(flushed.ec, X509_V_OK, false), Side::write);
  }
  if (writes_.empty() && close_requested_ && !shutdown_started_) finish_close();
}

bool TlsComm::write_front() {
  if (pieces_.empty()) {
    gather(writes_.front().message);
    piece_ = piece_offset_ = 0;
  }
  while (piece_ < pieces_.size()) {
    const auto rest = pieces_[piece_].subspan(piece_offset_);
    std::size_t n = 0;
    clear_ssl_errors();
    const int ret = SSL_write_ex(ssl(), rest.data(), rest.size(), &n);
    if (ret == 1) {
      piece_offset_ += n;
      if (piece_offset_ == pieces_[piece_].size()) {
        ++piece_;
        piece_offset_ = 0;
      }
      continue;
    }
    const auto outcome = ssl_outcome(ssl(), ret);
    if (outcome.kind != SslOutcome::failed) {
      wait(outcome, Waiter::write);
      return false;
    }
    auto done = std::move(writes_.front());
    writes_.pop_front();
    pieces_.clear();
    const auto code = translate_tls_error(outcome.ec, X509_V_OK, false);
    spdlog::debug("tls: write to {} failed: {}", peer_addr_, outcome.ec.message());
    post_handler(std::move(done.handler), code);
    fail(code, Side::write);
    return false;
  }
  return true;
}

// Each SSL_write is at least one TLS record: the prefix and the frames below
// FrameDecoder::kLargeFrameBytes are staged together, in order, and large frames are
// encrypted from their own memory in between.
void TlsComm::gather(const Message& message) {
  encode_prefix(message, prefix_);
  std::size_t staged_bytes = prefix_.size();
  for (const Frame& f : message.frames)
    if (f.size() < FrameDecoder::kLargeFrameBytes) staged_bytes += f.size();
  staged_.clear();
  staged_.reserve(staged_bytes);  // no reallocation below: pieces_ point into it
  pieces_.clear();
  std::size_t run_begin = 0;
  auto stage = [&](const char* data, std::size_t n) {
    staged_.insert(staged_.end(), data, data + n);
  };
  auto end_run = [&] {
    if (staged_.size() > run_begin)
      pieces_.emplace_back(staged_.data() + run_begin, staged_.size() - run_begin);
    run_begin = staged_.size();
  };
  stage(prefix_.data(), prefix_.size());
  for (const Frame& f : message.frames) {
    if (f.size() < FrameDecoder::kLargeFrameBytes) {
      stage(f.data(), f.size());
      continue;
    }
    end_run();
    pieces_.emplace_back(f.data(), f.size());
  }
  end_run();
}

// ---- closing ----

void TlsComm::start_close() {
  if (!begin_close()) return;
  decoder_.discard();
  reading_large_ = false;
  if (!write_waiting_) send_queued();
}

void TlsComm::finish_close() {
  shutdown_started_ = true;
  clear_ssl_errors();
  const int ret = SSL_shutdown(ssl());
  if (ret == 1) return close_socket();  // the peer's close_notify had come already
  if (ret == 0) {
    notify_sent_ = true;
    return drain();
  }
  const auto outcome = ssl_outcome(ssl(), ret);
  if (outcome.kind == SslOutcome::failed) {
    spdlog::debug("tls: closing {}: {}", peer_addr_, outcome.ec.message());
    return close_socket();
  }
  wait(outcome, Waiter::close);
}

// After close_notify the socket stays open, its input discarded, until the peer's
// close_notify or end of stream: closing with unread input would reset the connection, and a
// reset may destroy data the peer has not read yet.
void TlsComm::drain() {
  const auto into = decoder_.discard();
  for (;;) {
    std::size_t n = 0;
    clear_ssl_errors();
    const int ret = SSL_read_ex(ssl(), into.data(), into.size(), &n);
    if (ret == 1) continue;
    const auto outcome = ssl_outcome(ssl(), ret);
    if (outcome.kind == SslOutcome::failed) return close_socket();
    return wait(outcome, Waiter::close);
  }
}

void TlsComm::close_socket() {
  socket_closed_ = true;
  error_code ignored;
  stream_->socket.close(ignored);  // completes pending waits with operation_aborted
}

// The op that hit `cause` (the pending read when side is read; a failed write reports its own)
// gets `cause`; everything else pending fails with closed if the peer is gone, else aborted.
void TlsComm::fail(error_code cause, Side side) {
  if (!begin_fail(cause, side)) return;
  close_socket();
  for (auto& w : writes_) post_handler(std::move(w.handler), failed_);
  writes_.clear();
  pieces_.clear();
  decoder_.discard();
  reading_large_ = false;
}

}  // namespace taskwire::comm::tls
