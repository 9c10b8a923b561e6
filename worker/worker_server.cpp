// The worker server: lifecycle, the scheduler link and task execution. Transfers between
// workers are in peer_transfers.cpp.
#include <taskwire/worker/worker_server_impl.hpp>
#include <taskwire/worker/crash_record.hpp>

#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/host_address.hpp>
#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/runtime/process_info.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <future>
#include <optional>
#include <stdexcept>
#include <utility>

namespace taskwire::worker {
namespace {

using protocol::Op;

bool advertises_host(const std::string& scheme) { return scheme == "tcp" || scheme == "tls"; }

// The host this worker advertises on tcp:// and tls:// (see WorkerOptions::host); empty when
// nothing tells one (a scheduler reached over mpi:// or inproc:// gives no network address).
std::string advertised_host(const WorkerOptions& options, const std::string& local_address) {
  if (!options.host.empty() && !options.interface.empty())
    throw std::invalid_argument("worker: give a host or an interface to advertise, not both");
  if (!options.host.empty()) return options.host;
  if (!options.interface.empty()) return comm::interface_address(options.interface);
  const auto local = comm::Address::parse(local_address);
  if (!advertises_host(local.scheme)) return {};
  return comm::HostPort::parse(local.location).host;
}

// The default listen address: on the scheduler's scheme, reachable the way the scheduler
// is reached (see WorkerOptions::listen_address).
std::string default_listen_address(const WorkerOptions& options,
                                   const std::string& local_address) {
  const auto scheme = comm::Address::parse(options.scheduler_address).scheme;
  if (scheme == "inproc") return "inproc://auto";
  if (advertises_host(scheme))
    return scheme + "://" + comm::HostPort{advertised_host(options, local_address), 0}.str();
  const auto local = comm::Address::parse(local_address);
  if (scheme == "mpi") return "mpi://" + local.location.substr(0, local.location.find(':'));
  throw comm::CommError(make_error_code(comm::errc::bad_address),
                        fmt::format("no default listen address for scheme '{}': pass one "
                                    "(--listen ADDR)",
                                    scheme));
}

// What peers are told: the listener's own choice, unless this worker was told a host to
// advertise or binds a wildcard (whose contact address the listener can only guess from the
// host name).
std::string contact_address(const WorkerOptions& options, const comm::Listener& listener,
                            const std::string& host) {
  if (host.empty()) return listener.contact_address();
  const auto bound = listener.listen_address();
  const bool told = !options.host.empty() || !options.interface.empty();
  const auto bound_host = comm::HostPort::parse(comm::Address::parse(bound).location).host;
  return told || comm::is_wildcard_host(bound_host) ? comm::with_host(bound, host)
                                                    : listener.contact_address();
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

// ---- Worker: the public face ----

Worker::Worker(runtime::Context& context, comm::Registry& registry, WorkerOptions options,
               std::shared_ptr<KeptData> kept)
    : impl_(std::make_shared<Impl>(context, registry, std::move(options), std::move(kept))) {}

Worker::~Worker() {
  try {
    impl_->request_stop();
    // Bounded: if the context was stopped first, the close cannot run; do not hang.
    if (!impl_->wait_closed(std::chrono::seconds(10)))
      spdlog::error("worker {}: did not close within 10 s (is its context still running?)",
                    impl_->name());
    impl_->join_executor();
  } catch (const std::exception& e) {
    spdlog::error("worker: error while stopping: {}", e.what());
  }
}

void Worker::start() { impl_->start(); }
void Worker::request_stop() { impl_->request_stop(); }
void Worker::stop() {
  impl_->request_stop();
  impl_->wait_closed(std::chrono::milliseconds::max());
  impl_->join_executor();
}
bool Worker::wait_closed(std::chrono::milliseconds timeout) { return impl_->wait_closed(timeout); }
void Worker::wait_closed() { impl_->wait_closed(std::chrono::milliseconds::max()); }
CloseStatus Worker::close_status() const { return impl_->close_status(); }
std::string Worker::address() const { return impl_->address(); }
std::string Worker::name() const { return impl_->name(); }
std::string Worker::dashboard_url() const { return impl_->dashboard_url(); }
const DataStore& Worker::data() const { return impl_->data(); }
std::shared_ptr<KeptData> Worker::keep_data() { return impl_->keep_data(); }

// ---- lifecycle ----

Worker::Impl::Impl(runtime::Context& context, comm::Registry& registry, WorkerOptions options,
                   std::shared_ptr<KeptData> kept)
    : context_(context), registry_(registry), options_(std::move(options)),
      handshake_(comm::HandshakeOptions::from(context.config())),
      spill_directory_(kept ? std::move(kept->directory) : make_spill_directory(options_.memory)),
      strand_(asio::make_strand(context.executor())),
      data_(kept ? std::move(kept->data)
                 : std::make_shared<DataStore>(
                       spill_options(options_.memory, spill_directory_.path()))),
      executor_(options_.nthreads ? options_.nthreads : 1), heartbeat_(strand_),
      goodbye_timer_(strand_), memory_timer_(strand_), lifetime_timer_(strand_),
      inline_runs_(options_.inline_task_seconds, options_.nthreads ? options_.nthreads : 1) {
  if (options_.nthreads == 0) options_.nthreads = 1;
  handshake_.role = "worker";
  if (!options_.name.empty()) handshake_.name = options_.name;
}

std::shared_ptr<KeptData> Worker::Impl::keep_data() {
  if (data_->size() == 0) return nullptr;
  auto kept = std::make_shared<KeptData>();
  kept->directory = std::move(spill_directory_);  // ~Impl leaves an empty one alone
  kept->data = data_;
  return kept;
}

void Worker::Impl::start() {
  if (options_.scheduler_address.empty())
    throw std::invalid_argument("worker: no scheduler address given");
  runtime::check_resources(options_.resources, "worker resources");
  if (started_.exchange(true)) throw std::logic_error("Worker::start() called twice");
  comm::ConnectOptions connect;
  connect.timeout = options_.connect_timeout;
  connect.handshake = handshake_;
  connect.handshake->expect_role = "scheduler";  // not a worker's or a client's address
  connect.waiting_for = "the scheduler";
  try {
    scheduler_ = connect_to_scheduler(std::move(connect));
  } catch (...) {
    started_ = false;
    throw;
  }
  std::string host;  // advertised on tcp:// and tls://
  try {
    const auto local = scheduler_->local_address();
    const auto listen_at = options_.listen_address.empty()
                               ? default_listen_address(options_, local)
                               : options_.listen_address;
    const bool told = !options_.host.empty() || !options_.interface.empty();
    const bool networked = advertises_host(comm::Address::parse(listen_at).scheme);
    if (told && !networked)
      throw std::invalid_argument(
          fmt::format("worker: a host or interface to advertise is for tcp:// and tls://, "
                      "not {}",
                      listen_at));
    host = networked ? advertised_host(options_, local) : std::string();
    listener_ = listen_at_address(listen_at);
    for (const auto& extra : options_.extra_listen_addresses)
      extra_listeners_.push_back(listen_at_address(extra));
  } catch (...) {
    scheduler_->abort();
    scheduler_.reset();
    started_ = false;
    throw;
  }
  address_ = contact_address(options_, *listener_, host);
  for (const auto& extra : extra_listeners_)
    other_addresses_.push_back(contact_address(options_, *extra, host));
  name_ = options_.name.empty() ? address_ : options_.name;
  WorkerStateOptions so;
  so.address = address_;
  so.name = name_;
  so.nthreads = options_.nthreads;
  so.resources = options_.resources;
  so.max_gather_peers = options_.max_gather_peers;
  // A reply holds every key asked at once, in memory on both sides, and the sizes of the keys
  // to fetch are not known here: under a memory limit, one key per request keeps a transfer
  // to one result's size (docs/scheduling.md, "Memory").
  if (options_.memory.limit > 0) so.max_keys_per_gather = 1;
  state_ = std::make_unique<WorkerState>(std::move(so), data_);
  executor_.start();
  start_dashboard();
  spdlog::info("worker {}: listening at {}, {} thread{}, scheduler {}", name_, address_,
               options_.nthreads, options_.nthreads == 1 ? "" : "s", options_.scheduler_address);
  if (const auto& m = options_.memory; m.limit > 0)
    spdlog::info("worker {}: memory limit {} (spill past {:.0f}%/{:.0f}%, pause {:.0f}%, "
                 "terminate {:.0f}%), spilling to {}",
                 name_, format_bytes(m.limit), m.target * 100, m.spill * 100, m.pause * 100,
                 m.terminate * 100, spill_directory_.path().string());
  asio::post(strand_, [self = shared_from_this()] { self->on_started(); });
}

void Worker::Impl::on_started() {
  if (closing_) return;
  to_scheduler(Op::register_worker,
               protocol::RegisterWorker{name_, address_, options_.nthreads, options_.nanny,
                                        other_addresses_, runtime::host_name(),
                                        options_.resources, data_->keys()});
  // At once, so that the scheduler knows the worker's memory from the start (scheduler_info).
  send_heartbeat();
  crash::set_identity(name_, address_);
  read_scheduler();
  schedule_heartbeat();
  start_memory_monitor();
  start_lifetime();
}

void Worker::Impl::start_lifetime() {
  if (options_.retire_at == std::chrono::system_clock::time_point{}) return;
  const auto left = options_.retire_at - std::chrono::system_clock::now();
  lifetime_timer_.expires_after(std::max<std::chrono::steady_clock::duration>(left, {}));
  lifetime_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec && !self->closing_) self->on_lifetime_over();
  });
}

void Worker::Impl::on_lifetime_over() {
  const double grace = std::chrono::duration<double>(options_.retire_grace).count();
  spdlog::info("worker {}: its lifetime is over: asking the scheduler to retire it (it closes "
               "by itself in {:.3g} s if still there)",
               name_, grace);
  to_scheduler(Op::retire_worker, protocol::RetireWorker{"its --lifetime is over"});
  lifetime_timer_.expires_after(options_.retire_grace);
  lifetime_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->closing_) return;
    self->begin_close(fmt::format("its lifetime's grace of {} ms passed before the scheduler "
                                  "retired it; what it held alone is computed again elsewhere",
                                  self->options_.retire_grace.count()),
                      true);
  });
}

std::unique_ptr<comm::Listener> Worker::Impl::listen_at_address(const std::string& address) {
  comm::ListenOptions listen;
  listen.handshake = handshake_;
  // Weak: the listener is ours, a strong reference from its handler would be a cycle.
  std::weak_ptr<Impl> weak = shared_from_this();
  return comm::listen(
      registry_, address,
      [weak](comm::CommPtr c) {
        if (auto self = weak.lock()) self->on_accept(std::move(c));
        else c->abort();
      },
      std::move(listen));
}

comm::CommPtr Worker::Impl::connect_to_scheduler(comm::ConnectOptions options) {
  auto done = std::make_shared<std::promise<comm::CommPtr>>();
  auto connected = done->get_future();
  {
    std::lock_guard lock(connect_mu_);
    connecting_ = true;
    pending_connect_ = comm::async_connect(
        registry_, options_.scheduler_address, std::move(options),
        [done](error_code ec, std::string detail, comm::CommPtr comm) {
          if (ec) done->set_exception(std::make_exception_ptr(comm::CommError(ec, detail)));
          else done->set_value(std::move(comm));
        });
    if (stop_while_connecting_) pending_connect_.cancel();
  }
  struct Connected {
    Impl& impl;
    ~Connected() {
      std::lock_guard lock(impl.connect_mu_);
      impl.connecting_ = false;
      impl.pending_connect_ = {};
    }
  } connected_guard{*this};
  return connected.get();
}

void Worker::Impl::request_stop() {
  {
    std::lock_guard lock(connect_mu_);
    if (connecting_) {  // start() then throws CommError(aborted)
      stop_while_connecting_ = true;
      pending_connect_.cancel();
      return;
    }
  }
  if (!started_) {
    std::lock_guard lock(status_mu_);
    if (!status_.closed) status_ = CloseStatus{true, true, false, "the worker was never started"};
    status_cv_.notify_all();
    return;
  }
  asio::post(strand_, [self = shared_from_this()] {
    self->begin_close("the worker was asked to stop", true);
  });
}

bool Worker::Impl::wait_closed(std::chrono::milliseconds timeout) {
  std::unique_lock lock(status_mu_);
  auto closed = [this] { return status_.closed; };
  if (timeout == std::chrono::milliseconds::max()) {
    status_cv_.wait(lock, closed);
    return true;
  }
  return status_cv_.wait_for(lock, timeout, closed);
}

CloseStatus Worker::Impl::close_status() const {
  std::lock_guard lock(status_mu_);
  return status_;
}

std::string Worker::Impl::address() const { return address_; }
std::string Worker::Impl::name() const { return name_; }

// Closes everything, once. A clean close says goodbye to the scheduler (worker_closing,
// after the operations already queued) and reports the worker closed only once that message
// is handed to the transport, so a daemon exiting right after still delivers it.
void Worker::Impl::begin_close(std::string reason, bool clean) {
  if (closing_) return;
  closing_ = true;
  if (clean) spdlog::info("worker {}: closing: {}", name_, reason);
  else spdlog::error("worker {}: closing: {}", name_, reason);
  heartbeat_.cancel();
  memory_timer_.cancel();
  lifetime_timer_.cancel();
  stop_dashboard();
  if (listener_) listener_->stop();
  for (auto& extra : extra_listeners_) extra->stop();
  for (auto& [address, link] : peers_) {
    link->fetch_deadline.cancel();
    if (link->comm) link->comm->abort();
  }
  peers_.clear();
  served_.close_all();
  const auto dropped = executor_.request_stop();
  if (dropped) spdlog::debug("worker {}: {} queued task(s) dropped", name_, dropped);
  if (!scheduler_ || !clean || scheduler_->closed()) {
    if (scheduler_) scheduler_->abort();
    return finish_close(std::move(reason), clean);
  }
  outbox_.add(Op::worker_closing, protocol::Empty{});
  auto self = shared_from_this();
  auto finish = [self, reason, clean] { self->finish_close(reason, clean); };
  scheduler_->async_write(outbox_.take(), [self, finish](error_code) {
    asio::post(self->strand_, finish);
  });
  goodbye_timer_.expires_after(kGoodbyeTimeout);
  goodbye_timer_.async_wait([self, finish](error_code ec) {
    if (ec) return;
    spdlog::warn("worker {}: the goodbye to the scheduler was not sent within {} ms", self->name_,
                 kGoodbyeTimeout.count());
    self->scheduler_->abort();
    finish();
  });
}

void Worker::Impl::finish_close(std::string reason, bool clean) {
  if (closed_) return;
  closed_ = true;
  goodbye_timer_.cancel();
  if (scheduler_) scheduler_->close();
  {
    std::lock_guard lock(status_mu_);
    status_.closed = true;
    status_.clean = clean;
    status_.scheduler_lost = scheduler_lost_;
    status_.reason = std::move(reason);
  }
  status_cv_.notify_all();
}

// ---- the scheduler link ----

// Read handlers hold the worker weakly: the comm keeps its pending handler, and the worker
// keeps the comm, so a strong reference would be a cycle whenever the context stops first.
void Worker::Impl::read_scheduler() {
  std::weak_ptr<Impl> weak = shared_from_this();
  scheduler_->async_read([weak](error_code ec, runtime::Message m) {
    auto self = weak.lock();
    if (!self) return;
    // dispatch: inline when the strand is free (a post costs the event loop another pass).
    asio::dispatch(self->strand_, [self, ec, m = std::move(m)]() mutable {
      self->on_scheduler_message(ec, std::move(m));
    });
  });
}

void Worker::Impl::on_scheduler_message(error_code ec, runtime::Message message) {
  if (closing_) return;
  if (ec) {
    const auto reason =
        ec == comm::errc::closed
            ? fmt::format("the scheduler at {} closed the connection",
                          options_.scheduler_address)
            : fmt::format("lost the connection to the scheduler at {}: {}",
                          options_.scheduler_address, ec.message());
    scheduler_lost_ = true;
    return begin_close(reason, false);
  }
  std::vector<Event> events;
  std::optional<protocol::CloseWorker> close_requested;
  std::optional<std::string> refused;
  try {
    runtime::for_each_op(message, [&](runtime::OpReader& r) {
      switch (r.op()) {
        case Op::compute_task: {
          auto body = r.body<protocol::ComputeTask>();
          if (spdlog::should_log(spdlog::level::debug))
            spdlog::debug("worker {}: received task '{}' ({}, {} dependencies, attempt {})", name_,
                          body.spec.key, body.spec.function, body.spec.dependencies.size(),
                          body.attempt);
          ComputeTaskEvent e;
          e.spec = std::move(body.spec);
          e.who_has = std::move(body.who_has);
          e.frames.assign(r.frames().begin(), r.frames().end());
          e.attempt = body.attempt;
          for (auto& g : body.given) {
            if (g.frame >= r.frames().size())
              throw runtime::SerializationError("compute_task: a given dependency's frame is missing");
            e.given.emplace_back(std::move(g.key), r.frames()[g.frame]);
            e.frames[g.frame] = runtime::Frame();  // held once, by the store, not by the task too
          }
          events.emplace_back(std::move(e));
          break;
        }
        case Op::free_processing:
          busy_threads_asked_ = true;
          [[fallthrough]];
        case Op::free_keys: {
          auto keys = r.body<protocol::Keys>().keys;
          if (spdlog::should_log(spdlog::level::trace))
            spdlog::trace("worker {}: told to free {}", name_, fmt::join(keys, ", "));
          events.emplace_back(FreeKeysEvent{std::move(keys), ""});
          break;
        }
        case Op::steal_request: {
          auto b = r.body<protocol::StealRequest>();
          events.emplace_back(StealRequestEvent{std::move(b.key), "", b.attempt});
          break;
        }
        case Op::acquire_replicas:
          events.emplace_back(AcquireReplicasEvent{r.body<protocol::AcquireReplicas>().who_has, ""});
          break;
        case Op::close_worker:
          close_requested = r.body<protocol::CloseWorker>();
          break;
        case Op::worker_refused:
          refused = r.body<protocol::WorkerRefused>().reason;
          break;
        default:
          throw runtime::SerializationError(fmt::format(
              "unexpected operation {} for a worker", static_cast<int>(r.op())));
      }
    });
  } catch (const std::exception& e) {
    scheduler_->abort();
    return begin_close(fmt::format("malformed batch from the scheduler at {}: {}",
                                   scheduler_->peer_address(), e.what()),
                       false);
  }
  if (refused) {
    return begin_close(fmt::format("the scheduler at {} refused this worker: {}",
                                   options_.scheduler_address, *refused),
                       false);
  }
  if (!events.empty()) handle(std::move(events));
  if (close_requested && close_requested->rejoin) {
    scheduler_lost_ = true;
    return begin_close(fmt::format("the scheduler dropped this worker ({}); it may join again",
                                   close_requested->reason),
                       false);
  }
  if (close_requested)
    return begin_close(fmt::format("the scheduler asked this worker to close ({})",
                                   close_requested->reason),
                       true);
  read_scheduler();
}

template <class T>
void Worker::Impl::to_scheduler(protocol::Op op, const T& body, std::vector<runtime::Frame> payload) {
  if (closing_) return;
  if (!handling_ && !flush_posted_) {  // handle() flushes when it is done
    flush_posted_ = true;
    runtime::post_urgent(context_.urgent(), strand_,
                         [self = shared_from_this()] { self->flush(); });
  }
  outbox_.add(op, body, std::move(payload));
}
// worker_memory.cpp says when the worker pauses or resumes.
template void Worker::Impl::to_scheduler(protocol::Op, const protocol::WorkerStatus&,
                                         std::vector<runtime::Frame>);

void Worker::Impl::flush() {
  flush_posted_ = false;
  if (closing_ || outbox_.empty()) return;
  // A failed write aborts the comm; the pending read then reports it and closes the worker.
  scheduler_->async_write(outbox_.take(), [](error_code) {});
}

void Worker::Impl::schedule_heartbeat() {
  heartbeat_.expires_after(options_.heartbeat_interval);
  heartbeat_.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->closing_) return;
    self->send_heartbeat();
    self->schedule_heartbeat();
  });
}

void Worker::Impl::send_heartbeat() {
  to_scheduler(Op::heartbeat,
               protocol::Heartbeat{runtime::resident_set_bytes(),
                                   static_cast<std::uint32_t>(state_->executing_count())});
}

// ---- events and instructions ----

void Worker::Impl::handle(std::vector<Event> events) {
  if (closing_) return;
  inline_runs_.begin_handler();
  handling_ = true;
  struct EndHandling {  // also when something below throws: nothing queued waits
    Impl& w;
    ~EndHandling() {
      w.handling_ = false;
      try {
        w.flush();  // everything the events caused, as one message
      } catch (const std::exception& e) {
        spdlog::error("worker {}: sending to the scheduler failed: {}", w.name_, e.what());
      }
    }
  } end_handling{*this};
  run(state_->handle(std::move(events)));
  // Tasks run inline (task_execution.cpp) leave their results here: feed them back in a loop
  // (each may make the next ready task run inline), not by recursion.
  while (!inline_done_.empty() && !closing_) {
    auto done = std::exchange(inline_done_, {});
    run(state_->handle(std::move(done)));
  }
  inline_done_.clear();
  if (const auto busy = state_->cancelled_on_threads();
      (busy != reported_busy_threads_ || busy_threads_asked_) && !closing_) {
    reported_busy_threads_ = busy;
    busy_threads_asked_ = false;
    to_scheduler(Op::threads_busy, protocol::ThreadsBusy{static_cast<std::uint32_t>(busy)});
  }
}

void Worker::Impl::run(Instructions instructions) {
  for (auto& instruction : instructions) {
    if (spdlog::should_log(spdlog::level::trace))
      spdlog::trace("worker {}: {}", name_, instruction);
    std::visit(
        Overloaded{
            [this](Execute& i) { execute(std::move(i)); },
            [this](GatherDep& i) { gather(std::move(i)); },
            [this](SendTaskFinished& i) {
              std::vector<runtime::Frame> inline_result;
              if (i.nbytes <= options_.inline_result_bytes)
                if (auto frame = data_->get(i.key)) inline_result.push_back(std::move(*frame));
              to_scheduler(Op::task_finished, task_finished_message(i),
                           std::move(inline_result));
            },
            [this](SendTaskErred& i) {
              to_scheduler(Op::task_erred,
                           protocol::TaskErred{i.key, i.message, i.exception_type, i.attempt});
            },
            [this](SendMissingData& i) {
              to_scheduler(Op::missing_data, protocol::MissingData{i.key, i.missing, i.from});
            },
            [this](SendAddKeys& i) { to_scheduler(Op::add_keys, protocol::Keys{std::move(i.keys)}); },
            [this](SendStealResponse& i) {
              to_scheduler(Op::steal_response, protocol::StealResponse{i.key, i.stolen, i.attempt});
            },
        },
        instruction);
  }
}

protocol::TaskFinished Worker::Impl::task_finished_message(const SendTaskFinished& i) {
  protocol::TaskFinished m{i.key, i.nbytes, i.duration_s};
  m.thread = i.run.thread;
  m.attempt = i.attempt;
  if (i.run.transfer_bytes > 0 || i.run.transfer_stop > 0) {
    m.transfer_s = i.run.transfer_stop - i.run.transfer_start;
    m.transfer_end_ago_s = std::max(0.0, steady_seconds() - i.run.transfer_stop);
    m.transfer_bytes = i.run.transfer_bytes;
  }
  return m;
}

}  // namespace taskwire::worker
