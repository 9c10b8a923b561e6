#include <taskwire/comm/core/held_handlers.hpp>
#include <taskwire/comm/inproc/inproc_comm.hpp>
#include <taskwire/runtime/context.hpp>

#include <mutex>
#include <utility>

namespace taskwire::comm::inproc {

/// Whether a context still takes posts from the other side's threads. Cleared, under the
/// mutex, when its io_context begins to shut down; a post from outside happens under the
/// same mutex, so none lands in (or drops a handler on) a context being torn down.
struct ContextLife {
  std::recursive_mutex mutex;  // an end dropped in a failed post may post to its own peer
  bool running = true;
};

namespace {

/// Registered on first use, after the strand service an end creates first, so asio shuts
/// it down before that one: nothing from outside reaches a strand after its shutdown began.
class ContextLifeService final : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;
  explicit ContextLifeService(asio::execution_context& context) : service(context) {}
  std::shared_ptr<ContextLife> life() const { return life_; }

 private:
  void shutdown() override {
    std::lock_guard lock(life_->mutex);
    life_->running = false;
  }
  std::shared_ptr<ContextLife> life_ = std::make_shared<ContextLife>();
};
asio::execution_context::id ContextLifeService::id;

}  // namespace

InprocComm::InprocComm(asio::any_io_executor executor, std::string local, std::string peer,
                       std::uint64_t max_queued_bytes)
    : strand_(asio::make_strand(executor)),
      urgent_(&runtime::UrgentWork::of(asio::query(executor, asio::execution::context))),
      local_(std::move(local)), peer_addr_(std::move(peer)),
      life_(asio::use_service<ContextLifeService>(
                asio::query(executor, asio::execution::context)).life()),
      peer_life_(life_), max_queued_bytes_(max_queued_bytes) {}

// Whatever this end never read must not hold the peer's writer back.
InprocComm::~InprocComm() {
  try {
    stop_reading();
  } catch (...) {
    // cannot post to the peer (its executor is gone): nobody is left to wake
  }
}

template <class F>
void InprocComm::post(F&& f) {
  runtime::post_urgent(*urgent_, strand_, std::forward<F>(f));
}

template <class F>
bool InprocComm::post_to_peer(F&& f) {
  std::lock_guard lock(peer_life_->mutex);
  if (!peer_life_->running) return false;
  auto peer = peer_.lock();
  if (!peer) return false;
  InprocComm* target = peer.get();
  target->post([peer = std::move(peer), f = std::forward<F>(f)]() mutable { f(*peer); });
  return true;
}

void InprocComm::link(const std::shared_ptr<InprocComm>& a, const std::shared_ptr<InprocComm>& b) {
  a->peer_ = b;
  b->peer_ = a;
  a->peer_life_ = b->life_;
  b->peer_life_ = a->life_;
  b->in_ = a->out_;
  a->in_ = b->out_;
}

void InprocComm::async_read(ReadHandler handler) {
  post([self = shared_from_this(), h = std::move(handler)]() mutable {
    if (self->pending_read_) {
      return h(make_error_code(errc::protocol), Message{});  // contract: one read at a time
    }
    HeldHandlers::track_once(*self, self->tracked_);
    self->pending_read_ = std::move(h);
    self->flush_read();
  });
}

void InprocComm::drop_held_handlers() noexcept {
  auto read = std::exchange(pending_read_, nullptr);
  auto held = std::exchange(held_, {});
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
    took(m.total_bytes());
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
    const std::uint64_t bytes = m.total_bytes();
    if (!self->post_to_peer([m = std::move(m)](InprocComm& peer) mutable {
          peer.deliver(std::move(m));
        }))
      return h(make_error_code(errc::closed));
    const std::uint64_t start = self->written_;
    self->written_ += bytes;
    if (self->held_.empty() && start <= self->out_->taken.load() + self->max_queued_bytes_)
      return h({});  // the usual write: little unread ahead of it
    HeldHandlers::track_once(*self, self->tracked_);
    self->held_.push_back({start, std::move(h)});
    self->release_held();
  });
}

// Runs, in order, the handlers of the writes with at most the bound queued ahead of them.
// Before it gives up on one, the writer says it is waiting and looks again, so a reader that
// takes bytes after that look sees the flag and wakes it: no wake-up is lost. The usual write,
// with little unread ahead, touches no flag.
void InprocComm::release_held() {
  auto ready = [this] {
    return out_->reader_gone || aborted_ ||
           held_.front().start <= out_->taken.load() + max_queued_bytes_;
  };
  while (!held_.empty()) {
    if (!ready()) {
      out_->writer_waiting = true;
      if (!ready()) return;
      out_->writer_waiting = false;
    }
    auto h = std::move(held_.front().handler);
    held_.pop_front();
    h(aborted_ ? make_error_code(errc::aborted) : error_code{});
  }
}

void InprocComm::took(std::uint64_t bytes) {
  in_->taken += bytes;
  wake_writer();
}

void InprocComm::stop_reading() {
  if (!in_->reader_gone.exchange(true)) wake_writer();
}

// After the reader's count or reader_gone changed: the peer's writer looks again if it holds
// a handler (see release_held).
void InprocComm::wake_writer() {
  if (!in_->writer_waiting.load() || !in_->writer_waiting.exchange(false)) return;
  post_to_peer([](InprocComm& peer) { peer.release_held(); });
}

void InprocComm::deliver(Message message) {
  if (aborted_ || closed_flag_) return took(message.total_bytes());
  inbox_.push_back(std::move(message));
  flush_read();
}

void InprocComm::peer_gone() {
  peer_closed_ = true;
  flush_read();
  release_held();
}

void InprocComm::close() {
  post([self = shared_from_this()] {
    if (self->closed_flag_.exchange(true)) return;
    self->post_to_peer([](InprocComm& peer) { peer.peer_gone(); });
    self->flush_read();
    self->stop_reading();
  });
}

void InprocComm::abort() noexcept {
  try {
    post([self = shared_from_this()] {
      if (self->aborted_) return;
      self->aborted_ = true;
      self->closed_flag_ = true;
      self->inbox_.clear();
      self->post_to_peer([](InprocComm& peer) { peer.peer_gone(); });
      self->flush_read();
      self->stop_reading();
      self->release_held();  // queued writes fail with aborted
    });
  } catch (...) {
    closed_flag_ = true;  // cannot even post (executor gone): mark it, nothing else to do
  }
}

}  // namespace taskwire::comm::inproc
