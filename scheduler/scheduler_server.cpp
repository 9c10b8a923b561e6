#include <taskwire/scheduler/scheduler_server.hpp>

#include <taskwire/runtime/batch.hpp>
#include <taskwire/scheduler/client_op_handler.hpp>
#include <taskwire/scheduler/dashboard_service.hpp>
#include <taskwire/scheduler/server_core.hpp>
#include <taskwire/scheduler/worker_op_handler.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace taskwire::scheduler {

using protocol::Op;

struct SchedulerServer::Impl : std::enable_shared_from_this<Impl> {
  comm::Registry& registry;
  SchedulerServerOptions options;
  asio::strand<asio::any_io_executor> strand;
  ServerCore core;
  std::vector<std::unique_ptr<comm::Listener>> listeners;
  asio::steady_timer heartbeat_timer, shutdown_timer;
  std::promise<void> finished;
  bool done = false;
  DashboardService dashboard;
  WorkerOpHandler worker_ops;
  ClientOpHandler client_ops;

  // The client handler's shutdown request runs on the strand, while a handler holds `this`.
  Impl(comm::Registry& r, SchedulerServerOptions o)
      : registry(r), options(std::move(o)), strand(asio::make_strand(r.context().executor())),
        core(options.state), heartbeat_timer(strand), shutdown_timer(strand),
        dashboard(r, strand, core.state, options.dashboard, core.started),
        worker_ops(core, dashboard),
        client_ops(core, listeners, [this](const PeerPtr& p) { begin_shutdown(p); }) {}

  void on_accept(comm::CommPtr c) {
    auto peer = std::make_shared<Peer>();
    peer->comm = std::move(c);
    asio::post(strand, [self = shared_from_this(), peer] {
      if (self->core.stopping) return peer->comm->close();
      if (peer->comm->peer().role == "nanny") self->core.peers.add_nanny(peer);
      self->read(peer);
    });
  }

  void read(const PeerPtr& peer) {
    auto self = shared_from_this();
    peer->comm->async_read([self, peer](error_code ec, runtime::Message m) {
      // dispatch: inline when the scheduler's strand is free (a post would cost the event
      // loop one more pass, an epoll_wait system call, per message).
      asio::dispatch(self->strand, [self, peer, ec, m = std::move(m)] {
        if (ec) return self->peer_gone(peer, ec.message());
        try {
          self->handle_message(peer, m);
        } catch (const std::exception& e) {
          spdlog::warn("scheduler: malformed message from {} ({}): {}; closing that comm",
                       peer->comm->peer_address(), peer->id.empty() ? "new peer" : peer->id, e.what());
          peer->comm->abort();
          self->flush();
          return self->peer_gone(peer, std::string("protocol error: ") + e.what());
        }
        self->flush();
        if (peer->refused) return peer->comm->close();  // graceful: the refusal goes out first
        self->read(peer);
      });
    });
  }

  template <class E>
  void handle(E event) {
    core.handle(std::move(event));
  }
  void flush() { core.peers.flush(); }

  void handle_message(const PeerPtr& p, const runtime::Message& m) {
    runtime::for_each_op(m, [&](runtime::OpReader& r) {
      if (worker_ops.handle(p, r) || client_ops.handle(p, r)) return;
      throw std::runtime_error(fmt::format(
          "unexpected operation {}: not one a scheduler handles (is the peer a taskwire "
          "build of another version?)",
          static_cast<int>(r.op())));
    });
  }

  void peer_gone(const PeerPtr& p, const std::string& why) {
    if (p->kind == Peer::worker && core.peers.remove_worker(p->id)) {
      if (auto* recorder = dashboard.recorder()) recorder->worker_removed(p->id);
      if (!core.stopping) {
        if (p->closing) spdlog::info("scheduler: worker {} left", p->id);
        else spdlog::warn("scheduler: lost worker {}: {}", p->id, why);
        handle(RemoveWorker{p->id, why, p->closing, "", core.now()});
      }
    } else if (p->kind == Peer::client && core.peers.remove_client(p->id)) {
      spdlog::info("scheduler: client {} disconnected", p->id);
      if (!core.stopping) handle(RemoveClient{p->id, ""});
    }
    flush();
    if (core.stopping && core.peers.workers().empty()) finish();
  }

  void arm_heartbeat_check() {
    heartbeat_timer.expires_after(options.heartbeat_check_interval);
    heartbeat_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->core.stopping) return;
      using seconds = std::chrono::duration<double>;
      self->handle(CheckHeartbeats{self->core.now(), seconds(self->options.heartbeat_timeout).count(),
                                   "", seconds(self->options.heartbeat_check_interval).count()});
      self->flush();
      self->arm_heartbeat_check();
    });
  }

  void begin_shutdown(const PeerPtr& requester) {
    if (core.stopping) return;
    core.stopping = true;
    spdlog::info("scheduler: shutting down {} worker(s){}", core.peers.workers().size(),
                 requester ? " at a client's request" : "");
    for (auto& l : listeners) l->stop();
    dashboard.stop();
    heartbeat_timer.cancel();
    core.peers.tell_workers_to_close("the scheduler is shutting down");
    if (requester) core.peers.out_to(requester)->add(Op::shutting_down, protocol::Empty{});
    core.peers.tell_nannies_to_close("the scheduler is shutting down");
    flush();
    if (core.peers.workers().empty()) return finish();
    shutdown_timer.expires_after(std::chrono::seconds(5));
    shutdown_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) {
        spdlog::warn("scheduler: {} worker(s) did not close within 5 s", self->core.peers.workers().size());
        self->finish();
      }
    });
  }

  void finish() {
    if (done) return;
    done = true;
    shutdown_timer.cancel();
    core.peers.close_all();
    finished.set_value();
  }
};

namespace {
// `fn(impl)` run on the server's strand, its result waited for (as in inspect()).
template <class ImplPtr, class F>
auto on_strand(const ImplPtr& impl, F fn) {
  using R = decltype(fn(*impl));
  auto task = std::make_shared<std::packaged_task<R()>>([impl, fn] { return fn(*impl); });
  auto result = task->get_future();
  asio::post(impl->strand, [task] { (*task)(); });
  return result.get();
}
}  // namespace

std::size_t SchedulerServer::held_specs() {
  return on_strand(impl_, [](const Impl& impl) { return impl.core.specs.size(); });
}

std::uint64_t SchedulerServer::held_spec_bytes() {
  return on_strand(impl_, [](const Impl& impl) { return impl.core.specs.frame_bytes(); });
}

namespace detail {
asio::any_io_executor server_strand(const void* impl) {
  return static_cast<const SchedulerServer::Impl*>(impl)->strand;
}
const SchedulerState& server_state(const void* impl) {
  return static_cast<const SchedulerServer::Impl*>(impl)->core.state;
}
}  // namespace detail

SchedulerServer::SchedulerServer(comm::Registry& registry, SchedulerServerOptions options)
    : impl_(std::make_shared<Impl>(registry, std::move(options))),
      finished_(impl_->finished.get_future().share()) {}

SchedulerServer::~SchedulerServer() {
  stop();
  auto impl = impl_;
  // Shared: when the wait below times out, the handler still runs later and sets it.
  auto drained = std::make_shared<std::promise<void>>();
  auto fut = drained->get_future();
  asio::post(impl->strand, [impl, drained] {
    impl->heartbeat_timer.cancel();
    impl->shutdown_timer.cancel();
    impl->core.peers.abort_all();
    drained->set_value();
  });
  // Drained means begin_shutdown has run (the strand keeps order), so nothing else touches
  // the listeners. If not, begin_shutdown, still queued, stops them and ~Impl destroys them.
  if (fut.wait_for(impl->options.stop_timeout) == std::future_status::ready)
    impl->listeners.clear();
}

void SchedulerServer::start() {
  auto impl = impl_;
  // Announced whatever the context's role: workers and clients check that they reached one.
  comm::ListenOptions as_scheduler;
  as_scheduler.handshake = comm::HandshakeOptions::from(impl->registry.context().config());
  as_scheduler.handshake->role = "scheduler";
  for (const auto& address : impl->options.listen)
    impl->listeners.push_back(comm::listen(impl->registry, address, [weak = std::weak_ptr<Impl>(impl)](comm::CommPtr c) {
      if (auto self = weak.lock()) self->on_accept(std::move(c));
      else c->abort();
    }, as_scheduler));
  asio::post(impl->strand, [impl] { impl->arm_heartbeat_check(); });
  impl->dashboard.start(impl);
  for (const auto& l : impl->listeners) spdlog::info("scheduler: listening at {}", l->contact_address());
}

std::vector<std::string> SchedulerServer::addresses() const {
  std::vector<std::string> out;
  for (const auto& l : impl_->listeners) out.push_back(l->contact_address());
  return out;
}

std::string SchedulerServer::dashboard_url() const {
  return impl_->dashboard.url();
}

void SchedulerServer::retire_workers(std::vector<std::string> workers) {
  asio::post(impl_->strand, [impl = impl_, workers = std::move(workers)]() mutable {
    if (impl->core.stopping) return;
    impl->handle(RetireWorkers{"", 0, std::move(workers), 0, ""});  // "": nobody to answer
    impl->flush();
  });
}

void SchedulerServer::stop() {
  auto impl = impl_;
  // Shared, as in the destructor: the handler may run after this returns.
  auto started = std::make_shared<std::promise<void>>();
  auto fut = started->get_future();
  asio::post(impl->strand, [impl, started] {
    impl->begin_shutdown(nullptr);
    started->set_value();
  });
  fut.wait_for(impl->options.stop_timeout);
}

}  // namespace taskwire::scheduler
