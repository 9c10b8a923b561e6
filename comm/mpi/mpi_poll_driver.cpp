// PollDriver: where the MpiPoller's turns run (see mpi_poller.hpp).
#include <taskwire/comm/mpi/mpi_poller.hpp>
#include <taskwire/comm/mpi/mpi_poll_policy.hpp>
#include <taskwire/comm/mpi/mpi_poll_stats.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/comm/mpi/mpi_hosts.hpp>
#include <taskwire/runtime/trace.hpp>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace taskwire::comm::mpi {
namespace {

// Runnable tasks on the host now: the first number of /proc/loadavg's fourth field
// ("running/total"); -1 if it cannot be read. One pread of a file kept open.
int runnable_tasks() {
  static const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char* p = buf;
  for (int field = 0; field < 3 && p; ++field)
    if ((p = std::strchr(p, ' '))) ++p;
  return p ? std::atoi(p) : -1;
}

}  // namespace

// ---- PollDriver --------------------------------------------------------------------------

PollDriver::PollDriver(std::shared_ptr<MpiPoller> poller, asio::any_io_executor executor,
                       runtime::MpiPollConfig config)
    : poller_(std::move(poller)), strand_(asio::make_strand(executor)), timer_(strand_),
      guard_timer_(strand_), board_(poller_->board()),
      context_(&asio::query(executor, asio::execution::context)),
      urgent_(&runtime::UrgentWork::of(asio::query(executor, asio::execution::context))),
      backoff_(config), yield_unchecked_(config.yield_unchecked), cores_(available_cores()) {
  // Each driver waits on its own duplicate of the board's socket (drivers may run on
  // different io_contexts); whichever reads a datagram wakes, and its turn serves every
  // connection of the process.
  if (board_ && board_->usable())
    if (const int fd = ::fcntl(board_->fd(), F_DUPFD_CLOEXEC, 0); fd >= 0)
      wake_fd_ = std::make_unique<asio::posix::stream_descriptor>(strand_, fd);
  if (wake_fd_ && board_->event_fd() >= 0) {
    if (const int fd = ::fcntl(board_->event_fd(), F_DUPFD_CLOEXEC, 0); fd >= 0)
      wake_event_fd_ = std::make_unique<asio::posix::stream_descriptor>(strand_, fd);
    else
      wake_fd_.reset();  // peers write the eventfd nobody would wait on: no wakeable sleeps
  }
  if (wake_fd_ && board_->network_fd() >= 0) {
    if (const int fd = ::fcntl(board_->network_fd(), F_DUPFD_CLOEXEC, 0); fd >= 0)
      wake_net_fd_ = std::make_unique<asio::posix::stream_descriptor>(strand_, fd);
    else
      wake_fd_.reset();  // ranks on other hosts would send datagrams nobody waits for
  }
  remote_peers_ = board_ && board_->has_remote_peers();
  // The board is attached before any driver exists: whether peers can wake this rank is fixed.
  wakeable_ = wake_fd_ && board_->all_peers_reach_me();
  // Crowded: more ranks on this kernel than cores, wherever their namespaces say they are.
  policy_ = PollPolicy::from(config, wakeable_ && board_->crowded(), remote_peers_);
}

PollDriver::~PollDriver() { stopped_ = true; }

void PollDriver::start() {
  poller_->attach(this);
  auto self = shared_from_this();
  asio::post(strand_, [self] {
    if (self->wake_fd_) self->guard();
    self->run();
  });
}

void PollDriver::stop() noexcept {
  if (stopped_.exchange(true)) return;
  poller_->detach(this);
  try {
    asio::post(strand_, [self = shared_from_this()] {
      self->timer_.cancel();
      self->guard_timer_.cancel();
      error_code ignored;
      if (self->wake_fd_) self->wake_fd_->close(ignored);
      if (self->wake_event_fd_) self->wake_event_fd_->close(ignored);
      if (self->wake_net_fd_) self->wake_net_fd_->close(ignored);
    });
  } catch (...) {
  }
}

void PollDriver::wake() noexcept {
  kicked_ = true;
  if (sleeping_.exchange(false)) {
    try {
      asio::post(strand_, [self = shared_from_this()] {
        self->woken(self->sleep_id_, poll_counters().woken_locally);
      });
    } catch (...) {
    }
  }
}

std::chrono::microseconds PollDriver::next_wait(const TurnResult& r) {
  const auto now = MpiPoller::Clock::now();
  if (r.progress || kicked_.exchange(false)) {
    backoff_.reset();
    last_progress_ = now;
  }
  const PollView view{now - last_progress_, r.receiving,      r.sending,
                      r.sends_blocked,        wakeable_,        remote_peers_,
                      r.sending_remote};
  const auto d = decide(policy_, view, [this] { return core_free(); }, [&] { return backoff_.next(); });
  using Action = PollDecision::Action;
  untimed_ = d.action == Action::sleep_until_woken;
  yield_next_ = d.action == Action::yield_then_poll;
  sleep_word_ = d.word;
  return d.action == Action::sleep || untimed_ ? d.wait : std::chrono::microseconds(0);
}

// Read at every poll of the yield window: a check kept for 30 us let a rank go on
// yield-polling after a task started computing next to it (docs/mpi-poll-policy.md).
bool PollDriver::core_free() const {
  if (yield_unchecked_) return true;
  const int runnable = runnable_tasks();
  return runnable > 0 && runnable <= cores_;
}

void PollDriver::run() {
  if (stopped_) return;
  // Handlers run inside turns (a comm's, and what it dispatches inline: a scheduler's or a
  // worker's). One that throws must not end polling: whatever sleep was being set up is
  // void, the chain goes on from a fresh post, and the exception reaches the io_context
  // (the Context logs it and keeps serving).
  try {
    run_turns();
  } catch (...) {
    if (in_sleep_) {
      in_sleep_ = false;
      ++sleep_id_;
    }
    stay_awake();
    throw;
  }
}

void PollDriver::run_turns() {
  // Poll back to back, without a pass through the io_context (each pass costs an epoll_wait
  // system call, 1.8 us here), delivering inline, until a delivery found its strand busy
  // (it runs once the io_context gets its pass), the backoff says sleep, work was posted with
  // runtime::post_urgent (an in-process comm's hop, a client's submission, a task result from
  // a pool thread: in pool mode each hop waited out a burst, 4 hops in a round trip), or
  // kBurst is over: other handlers on this io_context wait at most that long.
  const auto burst_end = MpiPoller::Clock::now() + MpiPoller::kBurst;
  std::chrono::microseconds wait{0};
  for (;;) {
    const TurnResult r = poller_->turn(context_);
    if (r.finished) return;  // MPI is shut down: nothing left to poll
    poll_counters().turns.fetch_add(1, std::memory_order_relaxed);
    wait = next_wait(r);
    if (wait.count() > 0 || r.deferred || stopped_) break;
    if (urgent_->pending() > 0) break;  // work for this io thread waits
    if (MpiPoller::Clock::now() >= burst_end) break;
    if (std::exchange(yield_next_, false)) ::sched_yield();
  }
  auto self = shared_from_this();
  if (wait.count() == 0) {
    asio::post(strand_, [self] { self->run(); });
    return;
  }
  sleep(wait);
}

// Sleeps until the timer, a local wake() or, with the wake board, a datagram from a peer that
// sent to this rank. An untimed sleep (every peer can wake this rank) sets no timer: the
// guard timer bounds it. Each sleep costs as few system calls as asio allows
// (docs/measurements.md, "Fewer system calls per sleep").
void PollDriver::sleep(std::chrono::microseconds wait) {
  auto self = shared_from_this();
  auto* word = wake_fd_ ? board_->own_word() : nullptr;
  if (word) {
    // Publish "asleep", then look once more: a sender that sent before it saw the word
    // (its MPI_Isend precedes its load) left a message this turn finds.
    word->store(sleep_word_, std::memory_order_seq_cst);
    const TurnResult r = poller_->turn(context_);
    if (r.finished) return;
    if (r.progress) last_progress_ = MpiPoller::Clock::now();
    if (r.progress || r.deferred || stopped_) return stay_awake();
    // Without this look a message sent as the word flipped could wait for the guard (50 ms:
    // seen in traces of taskwire-taskbench, a worker's task-finished message).
    if (poller_->message_waiting()) return stay_awake();
  }
  sleeping_ = true;
  if (kicked_.load()) return stay_awake();  // a wake() raced with the decision to sleep
  const std::uint64_t id = ++sleep_id_;
  in_sleep_ = true;
  runtime::trace::record(runtime::trace::What::sleep);
  poll_counters().sleeps.fetch_add(1, std::memory_order_relaxed);
  if (word) read_wake_socket();
  if (word && untimed_) return;
  timer_.expires_after(wait);
  timer_.async_wait([self, id](error_code ec) {
    if (!ec) self->woken(id, poll_counters().woken_by_timer);
  });
}

// One read of each wake descriptor (the socket, the eventfd) stays pending while the driver
// sleeps (and after, until a wake-up comes): it consumes what woke this rank, with no
// separate drain.
void PollDriver::read_wake_socket() {
  arm_wake_read(wake_event_fd_.get(), asio::buffer(&wake_count_, sizeof wake_count_), reading_event_);
  arm_wake_read(wake_fd_.get(), asio::buffer(wake_buf_), reading_);
  // A datagram from another host may run ahead of the message it announces (an MPI
  // connection still being set up): counted as progress, it is followed by timed sleeps.
  arm_wake_read(wake_net_fd_.get(), asio::buffer(wake_net_buf_), reading_net_, true);
}

void PollDriver::arm_wake_read(asio::posix::stream_descriptor* fd, asio::mutable_buffer into,
                               bool& pending, bool counts_as_progress) {
  if (!fd || pending || !fd->is_open()) return;
  pending = true;
  fd->async_read_some(into, [self = shared_from_this(), &pending, counts_as_progress](error_code ec, std::size_t) {
    pending = false;
    if (ec || self->stopped_) return;
    if (counts_as_progress) self->kicked_ = true;
    self->woken(self->sleep_id_, poll_counters().woken_by_peer);
  });
}

// Wakes an untimed sleep that a wake-up lost (see PollPolicy::wakeable_sleep), every so often.
void PollDriver::guard() {
  guard_timer_.expires_after(policy_.wakeable_sleep);
  guard_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->stopped_) return;
    self->woken(self->sleep_id_, poll_counters().woken_by_timer);
    self->guard();
  });
}

void PollDriver::woken(std::uint64_t id, std::atomic<std::uint64_t>& by) {
  if (!in_sleep_ || id != sleep_id_) return;  // not asleep, or a sleep that already ended
  by.fetch_add(1, std::memory_order_relaxed);
  in_sleep_ = false;
  runtime::trace::record(runtime::trace::What::woken);
  ++sleep_id_;
  sleeping_ = false;
  if (wake_fd_) board_->own_word()->store(WakeBoard::kAwake, std::memory_order_seq_cst);
  timer_.cancel();  // a no-op (no system call) when no wait is pending
  run();
}

// Not sleeping after all: says so on the board and polls again from a fresh handler.
void PollDriver::stay_awake() {
  sleeping_ = false;
  if (wake_fd_) board_->own_word()->store(WakeBoard::kAwake, std::memory_order_seq_cst);
  asio::post(strand_, [self = shared_from_this()] { self->run(); });
}

}  // namespace taskwire::comm::mpi
