// The worker server: the public face, and Worker::Impl's lifecycle and the handler that
// runs events through the state machine and hands out its instructions.
#include <taskwire/worker/worker_server_impl.hpp>
#include <taskwire/worker/crash_record.hpp>

#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/host_address.hpp>
#include <taskwire/runtime/process_info.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
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
    : impl_(Impl::create(context, registry, std::move(options), std::move(kept))) {}

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

std::shared_ptr<Worker::Impl> Worker::Impl::create(runtime::Context& context,
                                                   comm::Registry& registry,
                                                   WorkerOptions options,
                                                   std::shared_ptr<KeptData> kept) {
  auto impl = std::make_shared<Impl>(context, registry, std::move(options), std::move(kept));
  impl->core_.owner = impl;
  return impl;
}

Worker::Impl::Impl(runtime::Context& context, comm::Registry& registry, WorkerOptions options,
                   std::shared_ptr<KeptData> kept)
    : core_(context, registry, std::move(options), std::move(kept)), dashboard_(core_),
      link_(core_, *this), tasks_(core_, *this, dashboard_), fetcher_(core_, *this, dashboard_),
      server_(core_, *this), memory_(core_, *this, link_), lifetime_timer_(core_.strand) {}

Worker::Impl::~Impl() {
  if (core_.spill_directory.empty()) return;
  core_.state.reset();
  core_.data.reset();  // its destructor removes the files (unless someone still holds the store)
  core_.spill_directory.remove();
}

std::shared_ptr<KeptData> Worker::Impl::keep_data() {
  if (core_.data->size() == 0) return nullptr;
  auto kept = std::make_shared<KeptData>();
  kept->directory = std::move(core_.spill_directory);  // ~Impl leaves an empty one alone
  kept->data = core_.data;
  return kept;
}

void Worker::Impl::start() {
  const auto& options = core_.options;
  if (options.scheduler_address.empty())
    throw std::invalid_argument("worker: no scheduler address given");
  runtime::check_resources(options.resources, "worker resources");
  if (started_.exchange(true)) throw std::logic_error("Worker::start() called twice");
  comm::ConnectOptions connect;
  connect.timeout = options.connect_timeout;
  connect.handshake = core_.handshake;
  connect.handshake->expect_role = "scheduler";  // not a worker's or a client's address
  connect.waiting_for = "the scheduler";
  try {
    link_.connect(std::move(connect));
  } catch (...) {
    started_ = false;
    throw;
  }
  std::string host;  // advertised on tcp:// and tls://
  try {
    host = listen();
  } catch (...) {
    link_.abandon();
    started_ = false;
    throw;
  }
  const auto& listeners = server_.listeners();
  core_.address = contact_address(options, *listeners.front(), host);
  for (std::size_t i = 1; i < listeners.size(); ++i)
    other_addresses_.push_back(contact_address(options, *listeners[i], host));
  core_.name = options.name.empty() ? core_.address : options.name;
  WorkerStateOptions so;
  so.address = core_.address;
  so.name = core_.name;
  so.nthreads = options.nthreads;
  so.resources = options.resources;
  so.max_gather_peers = options.max_gather_peers;
  // A reply holds every key asked at once, in memory on both sides, and the sizes of the keys
  // to fetch are not known here: under a memory limit, one key per request keeps a transfer
  // to one result's size (docs/scheduling.md, "Memory").
  if (options.memory.limit > 0) so.max_keys_per_gather = 1;
  core_.state = std::make_unique<WorkerState>(std::move(so), core_.data);
  tasks_.start();
  dashboard_.start();
  spdlog::info("worker {}: listening at {}, {} thread{}, scheduler {}", core_.name, core_.address,
               options.nthreads, options.nthreads == 1 ? "" : "s", options.scheduler_address);
  if (const auto& m = options.memory; m.limit > 0)
    spdlog::info("worker {}: memory limit {} (spill past {:.0f}%/{:.0f}%, pause {:.0f}%, "
                 "terminate {:.0f}%), spilling to {}",
                 core_.name, format_bytes(m.limit), m.target * 100, m.spill * 100, m.pause * 100,
                 m.terminate * 100, core_.spill_directory.path().string());
  asio::post(core_.strand, [self = shared_from_this()] { self->on_started(); });
}

std::string Worker::Impl::listen() {
  const auto& options = core_.options;
  const auto local = link_.local_address();
  const auto listen_at = options.listen_address.empty() ? default_listen_address(options, local)
                                                        : options.listen_address;
  const bool told = !options.host.empty() || !options.interface.empty();
  const bool networked = advertises_host(comm::Address::parse(listen_at).scheme);
  if (told && !networked)
    throw std::invalid_argument(
        fmt::format("worker: a host or interface to advertise is for tcp:// and tls://, not {}",
                    listen_at));
  auto host = networked ? advertised_host(options, local) : std::string();
  server_.listen(listen_at);
  for (const auto& address : options.extra_listen_addresses) server_.listen(address);
  return host;
}

void Worker::Impl::on_started() {
  if (core_.closing) return;
  link_.register_worker(protocol::RegisterWorker{
      core_.name, core_.address, core_.options.nthreads, core_.options.nanny, other_addresses_,
      runtime::host_name(), core_.options.resources, core_.data->keys()});
  crash::set_identity(core_.name, core_.address);
  link_.start_reading();
  memory_.start();
  start_lifetime();
}

void Worker::Impl::start_lifetime() {
  const auto retire_at = core_.options.retire_at;
  if (retire_at == std::chrono::system_clock::time_point{}) return;
  const auto left = retire_at - std::chrono::system_clock::now();
  lifetime_timer_.expires_after(std::max<std::chrono::steady_clock::duration>(left, {}));
  lifetime_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec && !self->core_.closing) self->on_lifetime_over();
  });
}

void Worker::Impl::on_lifetime_over() {
  const auto grace = core_.options.retire_grace;
  spdlog::info("worker {}: its lifetime is over: asking the scheduler to retire it (it closes "
               "by itself in {:.3g} s if still there)",
               core_.name, std::chrono::duration<double>(grace).count());
  link_.send(Op::retire_worker, protocol::RetireWorker{"its --lifetime is over"});
  lifetime_timer_.expires_after(grace);
  lifetime_timer_.async_wait([self = shared_from_this(), grace](error_code ec) {
    if (ec || self->core_.closing) return;
    self->begin_close(fmt::format("its lifetime's grace of {} ms passed before the scheduler "
                                  "retired it; what it held alone is computed again elsewhere",
                                  grace.count()),
                      true);
  });
}

void Worker::Impl::request_stop() {
  if (link_.cancel_connect()) return;  // start() then throws CommError(aborted)
  if (!started_) {
    std::lock_guard lock(status_mu_);
    if (!status_.closed) status_ = CloseStatus{true, true, false, "the worker was never started"};
    status_cv_.notify_all();
    return;
  }
  asio::post(core_.strand, [self = shared_from_this()] {
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

// Closes everything, once. A clean close says goodbye to the scheduler (worker_closing,
// after the operations already queued) and reports the worker closed only once that message
// is handed to the transport, so a daemon exiting right after still delivers it.
void Worker::Impl::begin_close(std::string reason, bool clean) {
  if (core_.closing) return;
  core_.closing = true;
  if (clean) spdlog::info("worker {}: closing: {}", core_.name, reason);
  else spdlog::error("worker {}: closing: {}", core_.name, reason);
  link_.stop_heartbeats();
  memory_.stop();
  lifetime_timer_.cancel();
  dashboard_.stop();
  server_.stop_listening();
  fetcher_.close_all();
  server_.close_served();
  const auto dropped = tasks_.request_stop();
  if (dropped) spdlog::debug("worker {}: {} queued task(s) dropped", core_.name, dropped);
  if (clean && link_.say_goodbye([self = shared_from_this(), reason, clean] {
        self->finish_close(reason, clean);
      }))
    return;
  link_.abort();
  finish_close(std::move(reason), clean);
}

void Worker::Impl::finish_close(std::string reason, bool clean) {
  if (closed_) return;
  closed_ = true;
  link_.close();
  {
    std::lock_guard lock(status_mu_);
    status_.closed = true;
    status_.clean = clean;
    status_.scheduler_lost = link_.lost();
    status_.reason = std::move(reason);
  }
  status_cv_.notify_all();
}

// ---- events and instructions ----

void Worker::Impl::handle(std::vector<Event> events) {
  if (core_.closing) return;
  tasks_.begin_handler();
  link_.begin_batch();
  struct EndBatch {  // also when something below throws: nothing queued waits
    SchedulerLink& link;
    ~EndBatch() { link.end_batch(); }  // everything the events caused, as one message
  } end_batch{link_};
  run(core_.state->handle(std::move(events)));
  server_.answer_parked();  // a result a peer waits for goes before the report about it
  // Tasks run inline leave their results in the runner: feed them back in a loop (each may
  // make the next ready task run inline), not by recursion.
  while (tasks_.has_inline_results() && !core_.closing) {
    run(core_.state->handle(tasks_.take_inline_results()));
    server_.answer_parked();
  }
  tasks_.drop_inline_results();
  link_.report_busy_threads(core_.state->cancelled_on_threads());
}

void Worker::Impl::run(Instructions instructions) {
  for (auto& instruction : instructions) {
    if (spdlog::should_log(spdlog::level::trace))
      spdlog::trace("worker {}: {}", core_.name, instruction);
    std::visit(Overloaded{
                   [this](Execute& i) { tasks_.execute(std::move(i)); },
                   [this](GatherDep& i) { fetcher_.gather(std::move(i)); },
                   [this](auto& report) { link_.report(report); },
               },
               instruction);
  }
}

}  // namespace taskwire::worker
