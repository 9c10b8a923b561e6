#include <taskwire/comm/inproc/inproc_comm.hpp>
#include <taskwire/runtime/context.hpp>

namespace taskwire::comm::inproc {

InprocComm::InprocComm(asio::any_io_executor executor, std::string local, std::string peer)
    : strand_(asio::make_strand(executor)),
      urgent_(&runtime::UrgentWork::of(asio::query(executor, asio::execution::context))),
      local_(std::move(local)), peer_addr_(std::move(peer)) {}

template <class F>
void InprocComm::post(F&& f) {
  runtime::post_urgent(*urgent_, strand_, std::forward<F>(f));
}

void InprocComm::link(const std::shared_ptr<InprocComm>& a, const std::shared_ptr<InprocComm>& b) {
  a->peer_ = b;
  b->peer_ = a;
}

void InprocComm::async_read(ReadHandler handler) {
  post([self = shared_from_this(), h = std::move(handler)]() mutable {
    if (self->pending_read_) {
      return h(make_error_code(errc::protocol), Message{});  // contract: one read at a time
    }
    self->pending_read_ = std::move(h);
    self->flush_read();
  });
}

void InprocComm::flush_read() {
  if (!pending_read_) return;
  if (aborted_) {
    auto h = std::move(pending_read_);
    pending_read_ = nullptr;
    return h(make_error_code(errc::aborted), Message{});
  }
  if (!inbox_.empty()) {
    auto m = std::move(inbox_.front());
    inbox_.pop_front();
    auto h = std::move(pending_read_);
    pending_read_ = nullptr;
    return h({}, std::move(m));
  }
  if (peer_closed_ || closed_flag_) {
    auto h = std::move(pending_read_);
    pending_read_ = nullptr;
    h(make_error_code(errc::closed), Message{});
  }
}

void InprocComm::async_write(Message message, WriteHandler handler) {
  post([self = shared_from_this(), m = std::move(message), h = std::move(handler)]() mutable {
    if (self->aborted_) return h(make_error_code(errc::aborted));
    if (self->closed_flag_ || self->peer_closed_) return h(make_error_code(errc::closed));
    auto peer = self->peer_.lock();
    if (!peer) return h(make_error_code(errc::closed));
    peer->post([peer, m = std::move(m)]() mutable { peer->deliver(std::move(m)); });
    h({});
  });
}

void InprocComm::deliver(Message message) {
  if (aborted_ || closed_flag_) return;
  inbox_.push_back(std::move(message));
  flush_read();
}

void InprocComm::peer_gone() {
  peer_closed_ = true;
  flush_read();
}

void InprocComm::close() {
  post([self = shared_from_this()] {
    if (self->closed_flag_.exchange(true)) return;
    if (auto peer = self->peer_.lock())
      peer->post([peer] { peer->peer_gone(); });
    self->flush_read();
  });
}

void InprocComm::abort() noexcept {
  try {
    post([self = shared_from_this()] {
      if (self->aborted_) return;
      self->aborted_ = true;
      self->closed_flag_ = true;
      self->inbox_.clear();
      if (auto peer = self->peer_.lock())
        peer->post([peer] { peer->peer_gone(); });
      self->flush_read();
    });
  } catch (...) {
    closed_flag_ = true;  // cannot even post (executor gone): mark it, nothing else to do
  }
}

}  // namespace taskwire::comm::inproc
