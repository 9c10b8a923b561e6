#include <taskwire/comm/tcp/tcp_comm.hpp>

#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/framing.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <span>
#include <utility>

namespace taskwire::comm::tcp {
std::string format_endpoint(const asio::ip::tcp::endpoint& endpoint) {
  return "tcp://" + HostPort{endpoint.address().to_string(), endpoint.port()}.str();
}

error_code translate_error(const error_code& ec, std::string_view where) {
  namespace ae = asio::error;
  if (ec == ae::eof || ec == ae::connection_reset || ec == ae::broken_pipe ||
      ec == ae::connection_aborted || ec == ae::shut_down || ec == ae::not_connected)
    return make_error_code(errc::closed);
  if (ec == ae::connection_refused) return make_error_code(errc::refused);
  if (ec == ae::operation_aborted) return make_error_code(errc::aborted);
  spdlog::debug("tcp: I/O error on {}: {}", where, ec.message());
  return make_error_code(errc::io);
}

TcpComm::TcpComm(Socket socket, const runtime::Limits& limits)
    : StrandComm("tcp", socket.get_executor(), limits), socket_(std::move(socket)) {
  set_socket_options(socket_, "tcp");
  error_code ec;
  socket_.non_blocking(true, ec);  // send_queued() offers each message to the socket directly
  if (ec) spdlog::debug("tcp: cannot make the socket non-blocking: {}", ec.message());
  const auto local = socket_.local_endpoint(ec);
  local_ = ec ? std::string("tcp://?") : format_endpoint(local);
  const auto remote = socket_.remote_endpoint(ec);
  peer_addr_ = ec ? std::string("tcp://?") : format_endpoint(remote);
}

TcpComm::~TcpComm() = default;

// ---- read side ----

void TcpComm::start_read(ReadHandler h) {
  if (failed_ || close_requested_ || peer_eof_) return post_handler(std::move(h), later_error());
  if (pending_read_) return post_handler(std::move(h), make_error_code(errc::protocol));
  pending_read_ = std::move(h);
  // Between messages the decoder is at a prefix; with nothing buffered advance() can only
  // start a socket read, so it may run now. Buffered bytes may hold a whole message, whose
  // delivery must not happen inside this call.
  if (!decoder_.partial()) advance();
  else asio::post(strand_, [self = shared_from_this()] { self->turn([&] { self->advance(); }); });
}

void TcpComm::advance() {
  if (!pending_read_ || failed_ || socket_reading_) return;
  Message message;
  auto step = decoder_.next(read_limits_, message);
  switch (step.kind) {
    case FrameDecoder::Step::message:
      return std::exchange(pending_read_, nullptr)({}, std::move(message));
    case FrameDecoder::Step::violation:
      return protocol_violation(step.violation_text,
                                step.tls_record ? errc::tls : errc::protocol);
    case FrameDecoder::Step::read:
      return read_some(step.into);
    case FrameDecoder::Step::read_all:
      return read_large_frame(step.into);
  }
}

void TcpComm::read_some(std::span<char> into) {
  socket_reading_ = true;
  socket_.async_read_some(asio::buffer(into.data(), into.size()),
                          [self = shared_from_this()](const error_code& ec, std::size_t n) {
                            self->turn([&] { self->on_read(ec, n); });
                          });
}

void TcpComm::read_large_frame(std::span<char> into) {
  socket_reading_ = true;
  // The completion condition sees each socket read of the frame: it counts their bytes, so
  // a frame of gigabytes still shows progress (bytes_received()) while it arrives.
  auto count_progress = [self = shared_from_this(), counted = std::size_t{0}](
                            const error_code& ec, std::size_t total) mutable -> std::size_t {
    self->bytes_received_ += total - counted;
    counted = total;
    return asio::transfer_all()(ec, total);
  };
  asio::async_read(socket_, asio::buffer(into.data(), into.size()), std::move(count_progress),
                   [self = shared_from_this()](const error_code& ec, std::size_t) {
                     self->turn([&] { self->on_large_read(ec); });
                   });
}

void TcpComm::on_read(const error_code& ec, std::size_t n) {
  socket_reading_ = false;
  if (failed_) return;
  if (close_requested_) return drain_step(ec);
  if (ec) return on_read_error(ec);
  bytes_received_ += n;
  decoder_.received(n);
  advance();
}

// The frame joins its message either way; a comm that has ended (or a read that failed)
// drops the message at once rather than holding a large frame until it is destroyed.
void TcpComm::on_large_read(const error_code& ec) {
  socket_reading_ = false;
  decoder_.large_received();
  if (failed_ || close_requested_) decoder_.discard();
  if (failed_) return;
  if (close_requested_) return drain_step(ec);
  if (ec) return on_read_error(ec);
  advance();
}

void TcpComm::on_read_error(const error_code& ec) {
  const auto code = translate_error(ec, peer_addr_);
  if (code != errc::closed) return fail(code, Side::read);
  if (ec == asio::error::eof && decoder_.partial())
    return protocol_violation("the connection ended part-way through a message");
  peer_eof_ = true;
  decoder_.discard();  // no read follows the peer's end
  if (pending_read_) {
    auto h = std::move(pending_read_);
    pending_read_ = nullptr;
    h(code, Message{});
  }
}

// ---- write side ----

void TcpComm::start_write(Message message, WriteHandler h) {
  if (!may_queue_write(message, h, close_requested_ || peer_eof_)) return;
  writes_.push_back(PendingWrite{std::move(message), std::move(h)});
  if (!writing_) send_queued();
}

// Sends the queued messages in order, one in flight. Each is first offered to the socket
// directly: a small one is usually taken whole, and then no reactor operation is needed.
// The rest of a message the socket does not take at once goes out with async_write.
void TcpComm::send_queued() {
  while (!writes_.empty() && !writing_ && !failed_) {
    const Message& m = writes_.front().message;
    encode_prefix(m, prefix_);
    wbufs_.clear();
    wbufs_.emplace_back(prefix_.data(), prefix_.size());
    std::size_t total = prefix_.size();
    for (const Frame& f : m.frames) {
      if (f.empty()) continue;
      wbufs_.emplace_back(f.data(), f.size());
      total += f.size();
    }
    error_code ec;
    std::size_t sent = socket_.write_some(std::span<const asio::const_buffer>(wbufs_), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      ec = {};
      sent = 0;
    }
    if (ec) {
      auto done = std::move(writes_.front());
      writes_.pop_front();
      const auto code = translate_error(ec, peer_addr_);
      post_handler(std::move(done.handler), code);
      return fail(code, Side::write);
    }
    if (sent == total) {
      auto done = std::move(writes_.front());
      writes_.pop_front();
      complete_write(std::move(done.handler));
      continue;
    }
    std::size_t first = 0;
    for (; sent >= wbufs_[first].size(); ++first) sent -= wbufs_[first].size();
    wbufs_[first] += sent;
    writing_ = true;
    asio::async_write(socket_, std::span<const asio::const_buffer>(wbufs_).subspan(first),
                      [self = shared_from_this()](const error_code& e, std::size_t) {
                        self->turn([&] { self->on_write(e); });
                      });
    return;
  }
  if (writes_.empty() && !writing_ && close_requested_ && !send_shut_ && !failed_)
    finish_close();
}

void TcpComm::on_write(const error_code& ec) {
  writing_ = false;
  PendingWrite done = std::move(writes_.front());
  writes_.pop_front();
  if (failed_) {
    if (done.handler) done.handler(failed_);
    return;
  }
  if (ec) {
    const auto code = translate_error(ec, peer_addr_);
    fail(code, Side::write);
    if (done.handler) done.handler(code);
    return;
  }
  complete_write(std::move(done.handler));
  send_queued();
}

// ---- closing ----

void TcpComm::start_close() {
  if (!begin_close()) return;
  decoder_.discard();
  if (writes_.empty() && !writing_) finish_close();
}

void TcpComm::finish_close() {
  error_code ignored;
  send_shut_ = true;
  socket_.shutdown(asio::socket_base::shutdown_send, ignored);
  if (peer_eof_) socket_.close(ignored);
  else drain();
}

// After close() the socket stays open, its input discarded, until the peer closes too: closing
// with unread input would reset the connection, and a reset may destroy data the peer has
// not read yet.
void TcpComm::drain() {
  if (failed_ || socket_reading_) return;
  if (peer_eof_) {
    error_code ignored;
    if (send_shut_) socket_.close(ignored);
    return;
  }
  read_some(decoder_.discard());
}

void TcpComm::drain_step(const error_code& ec) {
  if (!ec) return drain();
  peer_eof_ = true;
  drain();  // closes the socket once our side is shut down too
}

// The op that hit `cause` (the pending read when side is read; a failed write reports its own)
// gets `cause`; everything else pending fails with closed if the peer is gone, else aborted.
void TcpComm::fail(error_code cause, Side side) {
  if (!begin_fail(cause, side)) return;
  error_code ignored;
  socket_.close(ignored);  // completes the socket's pending operations with operation_aborted
  // The write in flight (front, when writing_) is completed by on_write; the rest fail now.
  const auto first = writes_.begin() + (writing_ ? 1 : 0);
  for (auto it = first; it != writes_.end(); ++it) post_handler(std::move(it->handler), failed_);
  writes_.erase(first, writes_.end());
  decoder_.discard();
}

}  // namespace taskwire::comm::tcp
