#include <taskwire/comm/core/connect.hpp>

#include <taskwire/comm/core/pending_handshakes.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <future>
#include <mutex>
#include <random>

namespace taskwire::comm {
namespace {

using Clock = std::chrono::steady_clock;

class ConnectOp : public std::enable_shared_from_this<ConnectOp> {
 public:
  ConnectOp(Registry& registry, Address address, std::chrono::milliseconds timeout,
            HandshakeOptions handshake, ConnectOptions options, ConnectHandler handler)
      : address_(std::move(address)), timeout_(timeout),
        retry_refused_(options.retry_refused), waiting_for_(std::move(options.waiting_for)),
        handshake_(std::move(handshake)), started_(Clock::now()),
        deadline_(timeout == kNoTimeout ? Clock::time_point::max() : started_ + timeout),
        last_wait_log_(started_),
        handler_(std::move(handler)),
        strand_(asio::make_strand(registry.context().executor())), timer_(strand_),
        deadline_timer_(strand_) {}

  void start(Backend& backend) {
    connector_ = backend.make_connector();
    auto self = shared_from_this();
    if (deadline_ != Clock::time_point::max()) {
      deadline_timer_.expires_at(deadline_);
      deadline_timer_.async_wait([self](error_code ec) {
        if (!ec) self->fail(make_error_code(errc::timeout), self->last_detail());
      });
    }
    asio::dispatch(strand_, [self] { self->attempt(); });
  }

  /// From any thread.
  PendingConnect handle() {
    std::weak_ptr<ConnectOp> weak = shared_from_this();
    return PendingConnect([weak] {
      auto self = weak.lock();
      if (!self) return;
      asio::dispatch(self->strand_, [self] {
        self->fail(make_error_code(errc::aborted),
                   fmt::format("connecting to {} was cancelled", self->address_));
      });
    });
  }

 private:
  void attempt() {
    if (done_) return;
    ++attempts_;
    auto self = shared_from_this();
    connector_->async_connect(address_, [self](error_code ec, CommPtr comm) {
      asio::dispatch(self->strand_, [self, ec, comm = std::move(comm)]() mutable {
        self->on_raw(ec, std::move(comm));
      });
    });
  }

  void on_raw(error_code ec, CommPtr comm) {
    if (done_) {
      if (comm) comm->abort();
      return;
    }
    if (ec) return retry_or_fail(ec, describe(ec));
    auto opts = handshake_;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    opts.timeout = std::max(std::chrono::milliseconds(1), std::min(opts.timeout, left));
    auto self = shared_from_this();
    async_handshake(comm, opts, HandshakeSide::connecting,
                    [self, comm](error_code ec, std::string detail) {
      asio::dispatch(self->strand_, [self, comm, ec, detail = std::move(detail)]() mutable {
        if (self->done_) return comm->abort();
        if (ec) return self->retry_or_fail(ec, std::move(detail));
        self->succeed(comm);
      });
    });
  }

  // A raw connect error as a sentence; a lookup failure names the host, the one part of the
  // address that is wrong.
  std::string describe(error_code ec) const {
    if (ec != make_error_code(errc::unknown_host) && ec != make_error_code(errc::dns_unavailable))
      return ec.message();
    std::string host = address_.location;
    try {
      host = HostPort::parse(address_.location).host;
    } catch (const CommError&) {
    }
    return fmt::format("cannot resolve host '{}' in {}: {}", host, address_, ec.message());
  }

  void retry_or_fail(error_code ec, std::string detail) {
    last_error_ = ec;
    last_text_ = std::move(detail);
    if (is_fatal(ec) || (!retry_refused_ && ec == make_error_code(errc::refused)))
      return fail(ec, last_text_);
    log_wait();
    auto delay = next_delay();
    if (Clock::now() + delay >= deadline_) delay = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    auto self = shared_from_this();
    timer_.expires_after(delay);
    timer_.async_wait([self](error_code e) {
      if (!e) self->attempt();
    });
  }

  void log_wait() {
    if (waiting_for_.empty()) return;
    // Info comes one interval in (a peer that is a moment late says nothing); the first miss
    // is logged at debug level only.
    const auto now = Clock::now();
    const bool first = attempts_ == 1;
    if (!first && now - last_wait_log_ < kWaitLogInterval) return;
    if (!first) last_wait_log_ = now;
    spdlog::log(first ? spdlog::level::debug : spdlog::level::info,
                "waiting for {} at {} ({} s): {}", waiting_for_, address_,
                std::chrono::duration_cast<std::chrono::seconds>(now - started_).count(),
                last_text_);
  }

  std::chrono::milliseconds next_delay() {
    thread_local std::minstd_rand rng{std::random_device{}()};
    const double base = std::min(1000.0, 10.0 * double(1u << std::min(attempts_ - 1, 10u)));
    std::uniform_real_distribution<double> jitter(0.5, 1.5);
    return std::chrono::milliseconds(static_cast<long>(base * jitter(rng)) + 1);
  }

  std::string last_detail() const {
    return fmt::format("could not connect to {} within {} ms ({} attempt{}){}", address_,
                       timeout_.count(), attempts_, attempts_ == 1 ? "" : "s",
                       last_text_.empty() ? "" : ": last error: " + last_text_);
  }

  void fail(error_code ec, std::string detail) {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    deadline_timer_.cancel();
    if (ec == make_error_code(errc::timeout) && last_error_ == make_error_code(errc::refused))
      ec = last_error_;  // say "refused", the more telling of the two
    auto h = std::move(handler_);
    h(ec, std::move(detail), nullptr);
  }

  void succeed(CommPtr comm) {
    done_ = true;
    timer_.cancel();
    deadline_timer_.cancel();
    auto h = std::move(handler_);
    h({}, {}, std::move(comm));
  }

  Address address_;
  std::chrono::milliseconds timeout_;
  bool retry_refused_;
  std::string waiting_for_;
  HandshakeOptions handshake_;
  Clock::time_point started_, deadline_;
  Clock::time_point last_wait_log_;
  ConnectHandler handler_;
  asio::strand<asio::any_io_executor> strand_;
  asio::steady_timer timer_, deadline_timer_;
  std::unique_ptr<Connector> connector_;
  unsigned attempts_ = 0;
  bool done_ = false;
  error_code last_error_;
  std::string last_text_;
};

// Wraps a backend listener: handshakes every raw comm before handing it on. The shared
// State outlives the listener object so late handshakes see `stopped` and drop their comm.
class HandshakingListener final : public Listener {
 public:
  struct State {
    std::mutex mu;
    bool stopped = false;
    AcceptHandler on_comm;
    RejectHandler on_reject;
    std::shared_ptr<PendingHandshakes> pending;  // null: this scheme is not capped
  };

  HandshakingListener(Registry& registry, const Address& address, AcceptHandler on_comm,
                      ListenOptions options)
      : state_(std::make_shared<State>()) {
    state_->on_comm = std::move(on_comm);
    state_->on_reject = std::move(options.on_reject);
    // An mpi or inproc peer is a rank of this job or this process, never an anonymous one;
    // hundreds of ranks starting at once must not evict each other.
    if (address.scheme != "mpi" && address.scheme != "inproc")
      state_->pending = std::make_shared<PendingHandshakes>(
          registry.context().executor(), options.max_pending_handshakes);
    auto opts = options.handshake ? *options.handshake
                                  : HandshakeOptions::from(registry.context().config());
    inner_ = registry.get(address.scheme)
                 .make_listener(
                     address,
                     [state = state_, opts](CommPtr comm) {
                       handshake(state, opts, std::move(comm));
                     },
                     RawListenOptions{state_->pending});
  }
  ~HandshakingListener() override { stop(); }

  void start() override { inner_->start(); }
  void stop() noexcept override {
    inner_->stop();
    std::lock_guard lock(state_->mu);
    state_->stopped = true;
    if (state_->pending) state_->pending->stop();
  }
  std::string listen_address() const override { return inner_->listen_address(); }
  std::string contact_address() const override { return inner_->contact_address(); }

 private:
  static void handshake(const std::shared_ptr<State>& state, const HandshakeOptions& opts,
                        CommPtr comm) {
    PendingHandshakes::Ticket ticket;
    if (state->pending) ticket = state->pending->admit(comm);
    // Once the peer has proved itself it no longer counts as pending, so it cannot be
    // evicted after the connecting side has seen its handshake succeed.
    PeerAuthenticated leave_pending;
    if (ticket) leave_pending = [state, ticket] { return !state->pending->finish(ticket); };
    async_handshake(
        comm, opts, HandshakeSide::accepting,
        [state, comm, ticket](error_code ec, std::string detail) {
          const bool evicted = ticket && state->pending->finish(ticket);
          if (ec) return rejected(*state, *comm, ec, detail, evicted);
          std::unique_lock lock(state->mu);
          if (state->stopped) return comm->abort();
          auto cb = state->on_comm;
          lock.unlock();
          cb(comm);
        },
        std::move(leave_pending));
  }

  static void rejected(State& state, Comm& comm, error_code ec, const std::string& detail,
                       bool evicted) {
    if (evicted)  // PendingHandshakes logged it, and summarises such drops
      spdlog::debug("rejected comm from {}: {}", comm.peer_address(), detail);
    else
      spdlog::warn("rejected comm from {}: {}", comm.peer_address(), detail);
    std::unique_lock lock(state.mu);
    if (state.stopped || !state.on_reject) return;
    auto cb = state.on_reject;
    lock.unlock();
    cb(ec, detail, comm.peer_address());
  }

  std::shared_ptr<State> state_;
  std::unique_ptr<Listener> inner_;
};

}  // namespace

PendingConnect async_connect(Registry& registry, const std::string& address,
                             ConnectOptions options, ConnectHandler handler) {
  Address parsed;
  Backend* backend = nullptr;
  try {
    parsed = Address::parse(address);
    backend = &registry.get(parsed.scheme);
  } catch (const CommError& e) {
    asio::post(registry.context().executor(),
               [h = std::move(handler), code = e.code(), what = std::string(e.what())] {
                 h(code, what, nullptr);
               });
    return {};
  }
  const auto& config = registry.context().config();
  auto timeout = options.timeout.count() > 0 ? options.timeout : config.connect_timeout;
  auto handshake = options.handshake ? std::move(*options.handshake)
                                     : HandshakeOptions::from(config);
  auto op = std::make_shared<ConnectOp>(registry, std::move(parsed), timeout,
                                        std::move(handshake), std::move(options),
                                        std::move(handler));
  op->start(*backend);
  return op->handle();
}

CommPtr connect(Registry& registry, const std::string& address, ConnectOptions options) {
  // Shared with the handler: set_value may still be inside the promise when get() returns.
  auto done = std::make_shared<std::promise<CommPtr>>();
  auto fut = done->get_future();
  async_connect(registry, address, std::move(options),
                [done](error_code ec, std::string detail, CommPtr comm) {
                  if (ec) done->set_exception(std::make_exception_ptr(CommError(ec, detail)));
                  else done->set_value(std::move(comm));
                });
  return fut.get();
}

CommPtr connect(Registry& registry, const std::string& address,
                std::chrono::milliseconds timeout) {
  ConnectOptions options;
  options.timeout = timeout;
  return connect(registry, address, std::move(options));
}

std::unique_ptr<Listener> listen(Registry& registry, const std::string& address,
                                 AcceptHandler on_comm, ListenOptions options) {
  auto l = std::make_unique<HandshakingListener>(registry, Address::parse(address),
                                                 std::move(on_comm), std::move(options));
  l->start();
  return l;
}

namespace {
// Waits for `fut`; on timeout aborts the comm (the pending operation then completes with an
// error into the shared promise) and throws.
template <class T>
T wait_sync(const CommPtr& comm, std::future<T>& fut, std::optional<std::chrono::milliseconds> timeout,
            const char* what) {
  if (timeout && fut.wait_for(*timeout) != std::future_status::ready) {
    comm->abort();
    throw CommError(make_error_code(errc::timeout),
                    fmt::format("{}: {} did not complete within {} ms", comm->peer_address(), what,
                                timeout->count()));
  }
  return fut.get();
}
}  // namespace

Message read_sync(const CommPtr& comm, std::optional<std::chrono::milliseconds> timeout) {
  auto done = std::make_shared<std::promise<Message>>();
  auto fut = done->get_future();
  comm->async_read([done](error_code ec, Message m) {
    if (ec) done->set_exception(std::make_exception_ptr(CommError(ec, "read: " + ec.message())));
    else done->set_value(std::move(m));
  });
  return wait_sync(comm, fut, timeout, "a read");
}

void write_sync(const CommPtr& comm, Message message, std::optional<std::chrono::milliseconds> timeout) {
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  comm->async_write(std::move(message), [done](error_code ec) {
    if (ec) done->set_exception(std::make_exception_ptr(CommError(ec, "write: " + ec.message())));
    else done->set_value();
  });
  wait_sync(comm, fut, timeout, "a write");
}

}  // namespace taskwire::comm
