#include <taskwire/comm/core/held_handlers.hpp>
#include <taskwire/comm/mpi/mpi_comm.hpp>
#include <taskwire/comm/mpi/mpi_poller.hpp>
#include <taskwire/runtime/trace.hpp>

#include <utility>

namespace taskwire::comm::mpi {

MpiComm::MpiComm(std::shared_ptr<MpiPoller> poller, ConnectionPtr conn,
                 asio::strand<asio::any_io_executor> strand, std::string local, std::string peer)
    : poller_(std::move(poller)), conn_(std::move(conn)), strand_(std::move(strand)),
      local_(std::move(local)), peer_addr_(std::move(peer)),
      max_unread_bytes_(conn_->limits.max_queued_bytes) {}

MpiComm::~MpiComm() {
  if (!local_closed_ && !aborted_) poller_->abort(conn_);
}

void MpiComm::async_read(ReadHandler handler) {
  if (strand_.running_in_this_thread()) {
    // The usual case, a read handler reading on: arm the read here, post only if it can
    // complete now (a handler never runs inside the initiating call).
    if (pending_read_) {
      asio::post(strand_, [h = std::move(handler)] { h(make_error_code(errc::protocol), Message{}); });
      return;
    }
    HeldHandlers::track_once(*this, tracked_);
    pending_read_ = std::move(handler);
    reading_ = shared_from_this();
    if (!inbox_.empty() || aborted_ || end_ || local_closed_)
      asio::post(strand_, [self = shared_from_this()] { self->flush_read(); });
    return;
  }
  asio::post(strand_, [self = shared_from_this(), h = std::move(handler)]() mutable {
    if (self->pending_read_) {
      return h(make_error_code(errc::protocol), Message{});  // contract: one read at a time
    }
    HeldHandlers::track_once(*self, self->tracked_);
    self->pending_read_ = std::move(h);
    self->reading_ = self;
    self->flush_read();
  });
}

void MpiComm::drop_held_handlers() noexcept {
  auto read = std::exchange(pending_read_, nullptr);
  auto keep = std::exchange(reading_, nullptr);  // may be the last reference: freed here
}

void MpiComm::flush_read() {
  if (!pending_read_) return;
  error_code ec;
  Message m;
  if (aborted_) {
    for (auto& dropped : inbox_) consumed(dropped);
    inbox_.clear();
    ec = make_error_code(errc::aborted);
  } else if (!inbox_.empty()) {
    m = std::move(inbox_.front());
    inbox_.pop_front();
    consumed(m);
  } else if (end_) {
    ec = end_;
  } else if (local_closed_) {
    ec = make_error_code(errc::closed);
  } else {
    return;
  }
  auto h = std::move(pending_read_);
  pending_read_ = nullptr;
  auto keep = std::move(reading_);
  h(ec, std::move(m));
}

void MpiComm::async_write(Message message, WriteHandler handler) {
  if (runtime::trace::enabled() && !message.frames.empty() && message.frames[0].size() > 1 &&
      message.frames[0].data()[0] == 1)
    runtime::trace::record(runtime::trace::What::sent,
                           static_cast<protocol::Op>(message.frames[0].data()[1]));
  if (aborted_ || local_closed_) {
    const auto code = aborted_ ? errc::aborted : errc::closed;
    asio::post(strand_, [self = shared_from_this(), h = std::move(handler), code] {
      h(make_error_code(code));
    });
    return;
  }
  poller_->submit(conn_, std::move(message), std::move(handler), shared_from_this());
}

void MpiComm::consumed(const Message& m) {
  const auto bytes = held_cost(m.total_bytes());
  const auto before = conn_->unread.fetch_sub(bytes);
  if (before - bytes <= max_unread_bytes_ && conn_->holding.load()) poller_->resume(conn_);
}

void MpiComm::on_message(Message message) {
  if (aborted_ || local_closed_) return consumed(message);
  inbox_.push_back(std::move(message));
  flush_read();
}

void MpiComm::on_end(error_code ec) {
  if (!end_) end_ = ec;
  closed_ = true;
  flush_read();
}

void MpiComm::close() {
  if (local_closed_.exchange(true)) return;
  closed_ = true;
  poller_->close(conn_);
  asio::post(strand_, [self = shared_from_this()] { self->flush_read(); });
}

void MpiComm::abort() noexcept {
  if (aborted_.exchange(true)) return;
  closed_ = true;
  poller_->abort(conn_);
  try {
    asio::post(strand_, [self = shared_from_this()] { self->flush_read(); });
  } catch (...) {
    // cannot even post (executor gone): nothing is waiting that could be told
  }
}

}  // namespace taskwire::comm::mpi
