#include <taskwire/scheduler/scheduler_server.hpp>

#include <taskwire/comm/core/address.hpp>
#include <taskwire/runtime/batch.hpp>
#include <taskwire/scheduler/dashboard_service.hpp>
#include <taskwire/scheduler/instruction_sender.hpp>
#include <taskwire/scheduler/peer_links.hpp>
#include <taskwire/scheduler/task_spec_store.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

namespace taskwire::scheduler {

using protocol::Op;
using Clock = std::chrono::steady_clock;

struct SchedulerServer::Impl : std::enable_shared_from_this<Impl> {
  comm::Registry& registry;
  SchedulerServerOptions options;
  asio::strand<asio::any_io_executor> strand;
  SchedulerState state;
  std::vector<std::unique_ptr<comm::Listener>> listeners;
  PeerLinks peers;
  TaskSpecStore specs;
  InstructionSender sender{peers, specs, state};
  asio::steady_timer heartbeat_timer, shutdown_timer;
  Clock::time_point t0 = Clock::now();
  std::promise<void> finished;
  bool stopping = false, done = false;
  DashboardService dashboard;

  Impl(comm::Registry& r, SchedulerServerOptions o)
      : registry(r), options(std::move(o)), strand(asio::make_strand(r.context().executor())),
        state(options.state), heartbeat_timer(strand), shutdown_timer(strand),
        dashboard(r, strand, state, options.dashboard, t0) {}

  double now() const { return std::chrono::duration<double>(Clock::now() - t0).count(); }

  void on_accept(comm::CommPtr c) {
    auto peer = std::make_shared<Peer>();
    peer->comm = std::move(c);
    asio::post(strand, [self = shared_from_this(), peer] {
      if (self->stopping) return peer->comm->close();
      if (peer->comm->peer().role == "nanny") self->peers.add_nanny(peer);
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
    sender.send(state.handle(Event(std::move(event))));
  }

  void flush() { peers.flush(); }
  runtime::BatchWriter* out_to(const PeerPtr& p) { return peers.out_to(p); }

  std::string require_worker(const PeerPtr& p, const char* op) {
    if (p->kind != Peer::worker) throw std::runtime_error(fmt::format("'{}' from a peer that is not a registered worker", op));
    return p->id;
  }
  void become_client(const PeerPtr& p) { peers.become_client(p); }

  void handle_message(const PeerPtr& p, const runtime::Message& m) {
    runtime::for_each_op(m, [&](runtime::OpReader& r) {
      if (handle_worker_op(p, r) || handle_client_op(p, r)) return;
      throw std::runtime_error(fmt::format(
          "unexpected operation {}: not one a scheduler handles (is the peer a taskwire "
          "build of another version?)",
          static_cast<int>(r.op())));
    });
  }

  /// False when r is not an operation of workers (or of nannies).
  bool handle_worker_op(const PeerPtr& p, runtime::OpReader& r) {
    switch (r.op()) {
      case Op::register_worker:
        on_register_worker(p, r.body<protocol::RegisterWorker>());
        return true;
      case Op::heartbeat: {
        auto b = r.body<protocol::Heartbeat>();
        auto worker = require_worker(p, "heartbeat");
        p->metrics = b;
        handle(Heartbeat{std::move(worker), now(), ""});
        return true;
      }
      case Op::task_finished:
        on_task_finished(p, r);
        return true;
      case Op::task_erred:
        on_task_erred(p, r.body<protocol::TaskErred>());
        return true;
      case Op::missing_data: {
        auto b = r.body<protocol::MissingData>();
        // From a client too (since protocol version 10): no holder it was told of could
        // send the key, so that the key is computed again instead of the client waiting.
        std::string reporter = p->kind == Peer::worker ? p->id : "";
        if (reporter.empty()) {
          become_client(p);
          reporter = p->id;
          b.key.clear();  // a client names no dependent of its own
        }
        handle(MissingData{std::move(reporter), b.missing, b.from, b.key, ""});
        return true;
      }
      case Op::threads_busy: {
        auto b = r.body<protocol::ThreadsBusy>();
        handle(ThreadsBusy{require_worker(p, "threads_busy"), static_cast<int>(b.count), ""});
        return true;
      }
      case Op::steal_response: {
        auto b = r.body<protocol::StealResponse>();
        handle(StealResponse{require_worker(p, "steal_response"), std::move(b.key), b.stolen, "",
                             b.attempt});
        return true;
      }
      case Op::worker_status: {
        auto b = r.body<protocol::WorkerStatus>();
        handle(WorkerStatusChanged{require_worker(p, "worker_status"), b.paused, ""});
        return true;
      }
      case Op::worker_died: {  // from a nanny, on a connection of its own
        if (p->kind != Peer::unknown) throw std::runtime_error("worker_died from a worker or client");
        auto b = r.body<protocol::WorkerDied>();
        handle(WorkerDied{b.address, b.name, b.cause, std::move(b.running), now(), ""});
        return true;
      }
      case Op::retire_worker: {
        auto b = r.body<protocol::RetireWorker>();
        handle(RetireWorker{require_worker(p, "retire_worker"), std::move(b.reason), ""});
        return true;
      }
      case Op::add_keys: {
        auto b = r.body<protocol::Keys>();
        handle(AddKeys{require_worker(p, "add_keys"), std::move(b.keys), ""});
        return true;
      }
      case Op::worker_closing:
        r.body<protocol::Empty>();
        require_worker(p, "worker_closing");
        p->closing = true;
        return true;
      default:
        return false;
    }
  }

  /// False when r is not an operation of clients.
  bool handle_client_op(const PeerPtr& p, runtime::OpReader& r) {
    switch (r.op()) {
      case Op::update_graph: {
        become_client(p);
        auto g = r.body<protocol::UpdateGraph>();
        on_update_graph(p, std::move(g), r.frames());
        return true;
      }
      case Op::release_keys:
        become_client(p);
        handle(ClientReleasesKeys{p->id, r.body<protocol::Keys>().keys, ""});
        return true;
      case Op::cancel_keys: {
        become_client(p);
        auto b = r.body<protocol::CancelKeys>();
        handle(CancelKeys{p->id, std::move(b.keys), b.force, ""});
        return true;
      }
      case Op::shutdown:
        r.body<protocol::Empty>();
        become_client(p);
        begin_shutdown(p);
        return true;
      case Op::scheduler_info: {
        auto b = r.body<protocol::SchedulerInfoRequest>();
        become_client(p);
        out_to(p)->add(Op::scheduler_info_reply, describe_cluster(*p, b.request_id));
        return true;
      }
      case Op::retire_workers: {
        auto b = r.body<protocol::RetireWorkersRequest>();
        become_client(p);
        handle(RetireWorkers{p->id, b.request_id, std::move(b.workers),
                             static_cast<std::size_t>(b.count), ""});
        return true;
      }
      case Op::rebalance: {
        auto b = r.body<protocol::RebalanceRequest>();
        become_client(p);
        handle(Rebalance{p->id, b.request_id, std::move(b.keys), std::move(b.workers), ""});
        return true;
      }
      default:
        return false;
    }
  }

  void on_register_worker(const PeerPtr& p, const protocol::RegisterWorker& b) {
    if (p->kind != Peer::unknown) throw std::runtime_error("register_worker sent twice");
    if (peers.worker(b.address)) throw std::runtime_error("a worker at " + b.address + " is already registered");
    if (stopping) {
      // Its connection was open when the shutdown began: it gets what the others got, or it
      // would wait to join again a scheduler that is gone (until its --death-timeout).
      out_to(p)->add(Op::close_worker, protocol::CloseWorker{"the scheduler is shutting down", false});
      return flush();
    }
    p->kind = Peer::worker;
    p->id = b.address;
    p->other_addresses = b.other_addresses;
    p->host = b.host;
    peers.add_worker(p);  // until the state machine refuses it (RefuseWorker)
    handle(AddWorker{b.address, static_cast<int>(b.nthreads), b.name, now(), "", b.nanny,
                     b.resources, b.held});
  }

  // The answer to scheduler_info: the state machine's view of workers and tasks, with what
  // only the server knows (listen addresses, clients, the workers' own reports).
  protocol::SchedulerInfo describe_cluster(const Peer& asking, std::uint64_t request_id) {
    protocol::SchedulerInfo info;
    info.request_id = request_id;
    const auto scheme = comm::Address::parse(asking.comm->local_address()).scheme;
    for (const auto& l : listeners) {
      info.addresses.push_back(l->contact_address());
      if (info.address.empty() && comm::Address::parse(info.addresses.back()).scheme == scheme)
        info.address = info.addresses.back();
    }
    info.clients = peers.client_count();
    for (const auto& [status, count] : state.tasks_by_state())
      info.tasks_by_state[std::string(to_string(status))] = count;
    const double t = now();
    for (const auto& w : state.workers()) {
      protocol::WorkerReport report;
      report.address = w.address;
      report.name = w.name;
      report.nthreads = static_cast<std::uint32_t>(w.nthreads);
      report.processing = w.processing;
      report.keys_held = w.has_what;
      report.bytes_held = static_cast<std::uint64_t>(std::max<std::int64_t>(w.nbytes, 0));
      report.since_heartbeat_s = std::max(0.0, t - w.last_seen);
      report.resources = w.resources;
      report.used_resources = w.used_resources;
      report.paused = w.paused;
      report.retiring = w.retiring;
      if (const auto peer = peers.worker(w.address)) {
        report.other_addresses = peer->other_addresses;
        report.host = peer->host;
        report.memory_rss = peer->metrics.memory_rss;
        report.executing = peer->metrics.executing;
      }
      info.workers.push_back(std::move(report));
    }
    for (auto& u : state.unrunnable(protocol::SchedulerInfo::kMaxUnrunnableReported))
      info.unrunnable.push_back({std::move(u.key), std::move(u.needs)});
    return info;
  }

  void on_task_finished(const PeerPtr& p, runtime::OpReader& r) {
    auto b = r.body<protocol::TaskFinished>();
    auto worker = require_worker(p, "task_finished");
    const runtime::Frame* inline_bytes = r.frames().size() == 1 ? &r.frames()[0] : nullptr;
    if (inline_bytes) sender.set_inline_result(b.key, *inline_bytes);
    if (auto* recorder = dashboard.recorder()) {
      const double t = now();
      if (recorder->records(b, t))
        recorder->task_finished(worker, state.nthreads_of(worker), state.function_of(b.key), b, t);
    }
    if (spdlog::should_log(spdlog::level::debug))
      spdlog::debug("scheduler: task '{}' finished on {} in {:.3f} ms, {} bytes", b.key, worker,
                    b.duration_s * 1e3, b.nbytes);
    // Kept before the report is handled (the consumers it lets the scheduler place go out in
    // this event), only for the current attempt (a late report of an older one must not
    // replace its bytes), and only small ones, whatever the worker sends inline.
    if (inline_bytes && state.attempt(b.key) == b.attempt)
      specs.keep_result(b.key, b.attempt, *inline_bytes);
    handle(TaskFinished{std::move(worker), std::move(b.key), static_cast<std::int64_t>(b.nbytes),
                        b.duration_s, "", b.attempt});
    sender.clear_inline_result();
  }

  void on_task_erred(const PeerPtr& p, protocol::TaskErred b) {
    auto worker = require_worker(p, "task_erred");
    if (spdlog::should_log(spdlog::level::debug))
      spdlog::debug("scheduler: task '{}' erred on {}: {}{}{}", b.key, worker, b.exception_type,
                    b.exception_type.empty() ? "" : ": ", b.message);
    if (auto* recorder = dashboard.recorder())
      recorder->task_erred(worker, state.nthreads_of(worker), b.key, state.function_of(b.key),
                           b.message, now());
    handle(TaskErred{std::move(worker), std::move(b.key), std::move(b.message),
                     std::move(b.exception_type), "", b.attempt});
  }

  void on_update_graph(const PeerPtr& p, protocol::UpdateGraph g, std::span<const runtime::Frame> frames) {
    UpdateGraph ev;
    ev.client = p->id;
    ev.wanted = std::move(g.wanted);
    for (auto& k : g.scattered)
      ev.scattered.push_back(
          {std::move(k.key), static_cast<std::int64_t>(k.nbytes), std::move(k.workers)});
    ev.tasks.reserve(g.tasks.size());
    for (auto& t : g.tasks) {
      const SpecRef ref = specs.keep(t, frames);
      ev.tasks.push_back(TaskSpec{std::move(t.key), std::move(t.function),
                                  std::move(t.dependencies), t.priority,
                                  static_cast<int>(t.retries), ref, t.user_priority,
                                  std::move(t.resources), std::move(t.workers),
                                  t.allow_other_workers});
    }
    handle(std::move(ev));
  }

  void peer_gone(const PeerPtr& p, const std::string& why) {
    if (p->kind == Peer::worker && peers.remove_worker(p->id)) {
      if (auto* recorder = dashboard.recorder()) recorder->worker_removed(p->id);
      if (!stopping) {
        if (p->closing) spdlog::info("scheduler: worker {} left", p->id);
        else spdlog::warn("scheduler: lost worker {}: {}", p->id, why);
        handle(RemoveWorker{p->id, why, p->closing, "", now()});
      }
    } else if (p->kind == Peer::client && peers.remove_client(p->id)) {
      spdlog::info("scheduler: client {} disconnected", p->id);
      if (!stopping) handle(RemoveClient{p->id, ""});
    }
    flush();
    if (stopping && peers.workers().empty()) finish();
  }

  void arm_heartbeat_check() {
    heartbeat_timer.expires_after(options.heartbeat_check_interval);
    heartbeat_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->stopping) return;
      using seconds = std::chrono::duration<double>;
      self->handle(CheckHeartbeats{self->now(), seconds(self->options.heartbeat_timeout).count(),
                                   "", seconds(self->options.heartbeat_check_interval).count()});
      self->flush();
      self->arm_heartbeat_check();
    });
  }

  void begin_shutdown(const PeerPtr& requester) {
    if (stopping) return;
    stopping = true;
    spdlog::info("scheduler: shutting down {} worker(s){}", peers.workers().size(),
                 requester ? " at a client's request" : "");
    for (auto& l : listeners) l->stop();
    dashboard.stop();
    heartbeat_timer.cancel();
    peers.tell_workers_to_close("the scheduler is shutting down");
    if (requester) out_to(requester)->add(Op::shutting_down, protocol::Empty{});
    peers.tell_nannies_to_close("the scheduler is shutting down");
    flush();
    if (peers.workers().empty()) return finish();
    shutdown_timer.expires_after(std::chrono::seconds(5));
    shutdown_timer.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) {
        spdlog::warn("scheduler: {} worker(s) did not close within 5 s", self->peers.workers().size());
        self->finish();
      }
    });
  }

  void finish() {
    if (done) return;
    done = true;
    shutdown_timer.cancel();
    peers.close_all();
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
  return on_strand(impl_, [](const Impl& impl) { return impl.specs.size(); });
}

std::uint64_t SchedulerServer::held_spec_bytes() {
  return on_strand(impl_, [](const Impl& impl) { return impl.specs.frame_bytes(); });
}

namespace detail {
asio::any_io_executor server_strand(const void* impl) {
  return static_cast<const SchedulerServer::Impl*>(impl)->strand;
}
const SchedulerState& server_state(const void* impl) {
  return static_cast<const SchedulerServer::Impl*>(impl)->state;
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
    impl->peers.abort_all();
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
    if (impl->stopping) return;
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
