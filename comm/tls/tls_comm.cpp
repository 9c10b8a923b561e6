#include <taskwire/comm/tls/tls_comm.hpp>

#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/framing.hpp>
#include <taskwire/comm/tls/tls_error.hpp>

#include <spdlog/spdlog.h>

#include <span>

namespace taskwire::comm::tls {

std::string format_endpoint(const asio::ip::tcp::endpoint& endpoint) {
  return "tls://" + HostPort{endpoint.address().to_string(), endpoint.port()}.str();
}

TlsComm::TlsComm(std::unique_ptr<Stream> stream, const runtime::Limits& limits)
    : limits_(limits), read_limits_(limits), strand_(stream->get_executor()),
      stream_(std::move(stream)) {
  auto& socket = stream_->next_layer();
  error_code ec;
  socket.set_option(asio::ip::tcp::no_delay(true), ec);
  if (ec) spdlog::debug("tls: cannot set TCP_NODELAY: {}", ec.message());
  socket.set_option(asio::socket_base::keep_alive(true), ec);
  if (ec) spdlog::debug("tls: cannot set SO_KEEPALIVE: {}", ec.message());
  const auto local = socket.local_endpoint(ec);
  local_ = ec ? std::string("tls://?") : format_endpoint(local);
  const auto remote = socket.remote_endpoint(ec);
  peer_addr_ = ec ? std::string("tls://?") : format_endpoint(remote);
}

TlsComm::~TlsComm() = default;

template <class F>
void TlsComm::run_on_strand(F&& f) {
  if (strand_.running_in_this_thread()) return f();
  asio::post(strand_, [self = shared_from_this(), f = std::forward<F>(f)]() mutable { f(); });
}

void TlsComm::post_handler(ReadHandler h, error_code ec) {
  asio::post(strand_, [h = std::move(h), ec] { h(ec, Message{}); });
}

void TlsComm::post_handler(WriteHandler h, error_code ec) {
  if (h) asio::post(strand_, [h = std::move(h), ec] { h(ec); });
}

error_code TlsComm::later_error() const {
  if (failed_) return failed_;
  return make_error_code(errc::closed);
}

// ---- public entry points: each runs its start_* on the strand ----

void TlsComm::async_read(ReadHandler handler) {
  run_on_strand([this, h = std::move(handler)]() mutable { start_read(std::move(h)); });
}

void TlsComm::async_write(Message message, WriteHandler handler) {
  run_on_strand([this, m = std::move(message), h = std::move(handler)]() mutable {
    start_write(std::move(m), std::move(h));
  });
}

void TlsComm::set_read_limits(const runtime::Limits& limits) {
  run_on_strand([this, limits] { read_limits_ = limits; });
}

void TlsComm::close() {
  closed_flag_ = true;
  run_on_strand([this] { start_close(); });
}

void TlsComm::abort() noexcept {
  closed_flag_ = true;
  try {
    run_on_strand([this] { fail(make_error_code(errc::aborted), Side::read); });
  } catch (...) {
    // No owner left (called from a destructor) or no memory: the socket closes with us.
  }
}

// ---- read side ----

void TlsComm::start_read(ReadHandler h) {
  if (failed_ || close_requested_ || peer_eof_) return post_handler(std::move(h), later_error());
  if (pending_read_) return post_handler(std::move(h), make_error_code(errc::protocol));
  pending_read_ = std::move(h);
  // With nothing buffered advance() can only start a stream read, so it may run now; buffered
  // bytes may hold a whole message, whose delivery must not happen inside this call.
  if (reading_) return;
  if (!decoder_.partial()) advance();
  else asio::post(strand_, [self = shared_from_this()] { self->advance(); });
}

void TlsComm::advance() {
  if (!pending_read_ || failed_ || reading_ || close_requested_) return;
  Message message;
  auto step = decoder_.next(read_limits_, message);
  switch (step.kind) {
    case FrameDecoder::Step::message: {
      auto h = std::move(pending_read_);
      pending_read_ = nullptr;
      return h({}, std::move(message));
    }
    case FrameDecoder::Step::violation:
      return protocol_violation(step.violation_text);
    case FrameDecoder::Step::read:
      reading_ = true;
      stream_->async_read_some(asio::buffer(step.into.data(), step.into.size()),
                               [self = shared_from_this()](const error_code& ec, std::size_t n) {
                                 self->on_read(ec, n);
                               });
      return;
    case FrameDecoder::Step::read_all: {
      reading_ = true;
      // The completion condition sees each read of the frame and counts its bytes, so a
      // frame of gigabytes still shows progress (bytes_received()) while it arrives.
      auto count_progress = [self = shared_from_this(), counted = std::size_t{0}](
                                const error_code& ec, std::size_t total) mutable -> std::size_t {
        self->bytes_received_ += total - counted;
        counted = total;
        return asio::transfer_all()(ec, total);
      };
      asio::async_read(*stream_, asio::buffer(step.into.data(), step.into.size()),
                       std::move(count_progress),
                       [self = shared_from_this()](const error_code& ec, std::size_t) {
                         self->on_large_read(ec);
                       });
      return;
    }
  }
}

void TlsComm::on_read(const error_code& ec, std::size_t n) {
  reading_ = false;
  if (failed_) return;
  if (close_requested_) {
    if (shutting_down_) shut_down_tls();  // the read finish_close() waited for
    return;
  }
  if (ec) return on_read_error(ec);
  bytes_received_ += n;
  decoder_.received(n);
  advance();
}

void TlsComm::on_large_read(const error_code& ec) {
  reading_ = false;
  if (failed_) return;
  if (close_requested_) {
    if (shutting_down_) shut_down_tls();
    return;
  }
  if (ec) return on_read_error(ec);
  decoder_.large_received();
  advance();
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
  if (decoder_.partial())
    return protocol_violation("the connection ended part-way through a message");
  peer_eof_ = true;
  if (pending_read_) {
    auto h = std::move(pending_read_);
    pending_read_ = nullptr;
    h(code, Message{});
  }
}

void TlsComm::protocol_violation(const std::string& text) {
  spdlog::warn("tls: protocol error from {}: {}; aborting this comm", peer_addr_, text);
  fail(make_error_code(errc::protocol), Side::read);
}

// ---- write side ----

void TlsComm::start_write(Message message, WriteHandler h) {
  if (failed_ || close_requested_ || peer_eof_) return post_handler(std::move(h), later_error());
  if (auto why = check_limits(message, limits_); !why.empty()) {
    spdlog::warn("tls: not sending a message to {}: {}", peer_addr_, why);
    return post_handler(std::move(h), make_error_code(errc::protocol));
  }
  writes_.push_back(PendingWrite{std::move(message), std::move(h)});
  send_next();
}

void TlsComm::send_next() {
  if (writing_ || failed_) return;
  if (writes_.empty()) {
    if (close_requested_ && !shutting_down_) finish_close();
    return;
  }
  gather(writes_.front().message);
  writing_ = true;
  asio::async_write(*stream_, std::span<const asio::const_buffer>(wbufs_),
                    [self = shared_from_this()](const error_code& ec, std::size_t) {
                      self->on_write(ec);
                    });
}

// Each buffer of an ssl::stream write becomes at least one TLS record and one socket write:
// the prefix and the frames below FrameDecoder::kLargeFrameBytes are staged together, in
// order, and large frames are written from their own memory in between.
void TlsComm::gather(const Message& message) {
  encode_prefix(message, prefix_);
  std::size_t staged_bytes = prefix_.size();
  for (const Frame& f : message.frames)
    if (f.size() < FrameDecoder::kLargeFrameBytes) staged_bytes += f.size();
  staged_.clear();
  staged_.reserve(staged_bytes);  // no reallocation below: wbufs_ point into it
  wbufs_.clear();
  std::size_t run_begin = 0;
  auto stage = [&](const char* data, std::size_t n) {
    staged_.insert(staged_.end(), data, data + n);
  };
  auto end_run = [&] {
    if (staged_.size() > run_begin)
      wbufs_.emplace_back(staged_.data() + run_begin, staged_.size() - run_begin);
    run_begin = staged_.size();
  };
  stage(prefix_.data(), prefix_.size());
  for (const Frame& f : message.frames) {
    if (f.size() < FrameDecoder::kLargeFrameBytes) {
      stage(f.data(), f.size());
      continue;
    }
    end_run();
    wbufs_.emplace_back(f.data(), f.size());
  }
  end_run();
}

void TlsComm::on_write(const error_code& ec) {
  writing_ = false;
  PendingWrite done = std::move(writes_.front());
  writes_.pop_front();
  if (failed_) {
    if (done.handler) done.handler(failed_);
    return;
  }
  if (ec) {
    const auto code = translate_tls_error(ec, X509_V_OK, false);
    spdlog::debug("tls: write to {} failed: {}", peer_addr_, ec.message());
    fail(code, Side::write);
    if (done.handler) done.handler(code);
    return;
  }
  if (done.handler) done.handler({});
  send_next();
}

// ---- closing ----

void TlsComm::start_close() {
  if (failed_ || close_requested_) return;
  close_requested_ = true;
  closed_flag_ = true;
  if (pending_read_) {
    post_handler(std::move(pending_read_), make_error_code(errc::closed));
    pending_read_ = nullptr;
  }
  decoder_.discard();
  send_next();
}

// async_shutdown reads as well as writes, and an ssl::stream takes one read at a time: a read
// still in flight is cancelled first, and its completion (on_read) carries on here.
void TlsComm::finish_close() {
  shutting_down_ = true;
  error_code ignored;
  if (reading_) stream_->next_layer().cancel(ignored);
  else shut_down_tls();
}

void TlsComm::shut_down_tls() {
  stream_->async_shutdown([self = shared_from_this()](const error_code& ec) {
    if (ec) spdlog::debug("tls: closing {}: {}", self->peer_addr_, ec.message());
    error_code ignored;
    self->stream_->next_layer().close(ignored);
  });
}

// The op that hit `cause` (the pending read when side is read; a failed write reports its own)
// gets `cause`; everything else pending fails with closed if the peer is gone, else aborted.
void TlsComm::fail(error_code cause, Side side) {
  if (failed_) return;
  const auto other = make_error_code(cause == errc::closed ? errc::closed : errc::aborted);
  failed_ = other;
  closed_flag_ = true;
  error_code ignored;
  stream_->next_layer().close(ignored);  // completes pending operations with operation_aborted
  if (pending_read_) {
    post_handler(std::move(pending_read_), side == Side::read ? cause : other);
    pending_read_ = nullptr;
  }
  // The write in flight (front, when writing_) is completed by on_write; the rest fail now.
  const auto first = writes_.begin() + (writing_ ? 1 : 0);
  for (auto it = first; it != writes_.end(); ++it) post_handler(std::move(it->handler), other);
  writes_.erase(first, writes_.end());
  decoder_.discard();
}

}  // namespace taskwire::comm::tls
