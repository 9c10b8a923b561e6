#include <taskwire/client/client_core.hpp>
#include <taskwire/client/future.hpp>
#include <taskwire/client/graph_split.hpp>

#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/framing.hpp>
#include <taskwire/runtime/unique_id.hpp>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <future>
#include <utility>

namespace taskwire::client {

using protocol::Op;

namespace {
constexpr std::chrono::milliseconds kFinalWriteWait{2000};
// Fetches of one result before giving up (see ClientCore::results()).
constexpr int kFetchAttempts = 5;

// Wraps a handler for the io thread so that it never holds the last reference to the core.
// With its own io thread (own_thread), a handler holding one could outlive the user's last
// Client and run ~ClientCore there, which would join that very thread (a crash seen as
// "Resource deadlock avoided" at the end of a program): so it only checks the core is
// alive, and ~ClientCore joins the io thread before any member goes, so the core outlives a
// handler that found it alive. With a context the core does not own (no join), the handler
// holds the core for its duration.
template <class F>
auto guarded(ClientCore& core, bool own_thread, F f) {
  return [weak = core.weak_from_this(), own_thread, f = std::move(f)](auto&&... args) mutable {
    if (own_thread) {
      if (!weak.expired()) f(std::forward<decltype(args)>(args)...);
      return;
    }
    if (auto keep = weak.lock()) f(std::forward<decltype(args)>(args)...);
  };
}
}  // namespace

KeyRef::KeyRef(std::shared_ptr<ClientCore> core, std::string key)
    : core_(std::move(core)), key_(std::move(key)) {}

KeyRef::~KeyRef() {
  try {
    core_->release(key_);
  } catch (...) {
  }
}

namespace {
// A client handshakes as "client" (its context's role) and refuses a peer that is not a
// scheduler: pointed at a worker's port, it is told so at once.
comm::ConnectOptions to_scheduler(comm::Registry& registry, std::chrono::milliseconds timeout) {
  comm::ConnectOptions options;
  options.timeout = timeout;
  options.handshake = comm::HandshakeOptions::from(registry.context().config());
  options.handshake->expect_role = "scheduler";
  return options;
}

// A request's reply, kept only while its request waits (one that timed out is dropped).
template <class Reply>
void take_reply(std::map<std::uint64_t, std::optional<Reply>>& waiting, runtime::OpReader& r) {
  auto b = r.body<Reply>();
  if (auto it = waiting.find(b.request_id); it != waiting.end()) it->second = std::move(b);
}
}  // namespace

std::shared_ptr<ClientCore> ClientCore::connect(const std::string& address, ClientOptions options) {
  std::shared_ptr<ClientCore> core(new ClientCore());
  options.config.role = "client";
  options.config.mpi.yield_unchecked = true;
  core->name_ = options.name.empty() ? fmt::format("client-{}", ::getpid()) : options.name;
  options.config.name = core->name_;
  core->own_context_ = std::make_unique<runtime::Context>(options.config, 1);
  core->own_context_->enable_driving(options.config.client_drive_linger);
  core->own_registry_ = std::make_unique<comm::Registry>(*core->own_context_);
  comm::register_builtin_backends(*core->own_registry_);
  core->registry_ = core->own_registry_.get();
  core->context_ = core->own_context_.get();
  core->fetch_timeout_ = options.fetch_timeout;
  core->own_context_->start();
  core->start(comm::connect(*core->registry_, address,
                            to_scheduler(*core->registry_, options.connect_timeout)));
  return core;
}

std::shared_ptr<ClientCore> ClientCore::connect(comm::Registry& registry, const std::string& address,
                                                const ClientOptions& options) {
  std::shared_ptr<ClientCore> core(new ClientCore());
  core->registry_ = &registry;
  core->context_ = &registry.context();
  core->fetch_timeout_ = options.fetch_timeout;
  core->name_ = registry.context().config().name;
  core->start(comm::connect(registry, address, to_scheduler(registry, options.connect_timeout)));
  return core;
}

ClientCore::ClientCore() : id_(runtime::random_id_128()) {}

ClientCore::~ClientCore() {
  // What this destructor and close() hand to the io thread should not wait out a linger
  // (Context::enable_driving): the context may be stopped right after. (The context, not
  // the registry: futures may outlive a registry, see mpi::detail::ClusterRank.)
  std::optional<runtime::Context::Awake> awake;
  if (context_) awake.emplace(context_->keep_awake());
  if (own_context_) {
    // Stopping the io thread drops what it has not run yet: hand what is queued (releases,
    // cancels, submissions) to the transport first, waiting a bounded time for it to leave.
    auto sent = std::make_shared<std::promise<void>>();
    auto left = sent->get_future();
    bool writing = false;
    try {
      std::lock_guard lock(out_mu_);
      if ((!out_.empty() || !releases_.empty()) && scheduler_ && !scheduler_->closed()) {
        write_out(take_out_locked(), [sent] { sent->set_value(); });
        writing = true;
      }
    } catch (const std::exception& e) {
      spdlog::debug("client: final write to the scheduler failed: {}", e.what());
    }
    if (writing && left.wait_for(kFinalWriteWait) != std::future_status::ready)
      spdlog::warn("client: the last messages to the scheduler were not sent within {} ms",
                   kFinalWriteWait.count());
  }
  close();
  if (own_context_) own_context_->stop();
}

void ClientCore::close() {
  comm::CommPtr s;
  std::map<std::string, std::shared_ptr<WorkerLink>> workers;
  {
    std::lock_guard lock(mu_);
    s = scheduler_;
    workers.swap(workers_);
  }
  flush();
  if (s) s->close();
  for (auto& [addr, link] : workers)
    if (link->comm) link->comm->close();
}

void ClientCore::start(comm::CommPtr scheduler) {
  scheduler_ = std::move(scheduler);
  out_.set_limits(context_->config().limits);
  release_timer_.emplace(scheduler_->executor());
  read_loop();
}

void ClientCore::read_loop() {
  const bool own_thread = own_context_ != nullptr;
  scheduler_->async_read(guarded(*this, own_thread, [this](error_code ec, runtime::Message m) {
    if (ec) return fail_all("lost the connection to the scheduler: " + ec.message());
    try {
      on_batch(m);
    } catch (const std::exception& e) {
      spdlog::error("client: malformed message from the scheduler: {}", e.what());
      scheduler_->abort();
      return fail_all(std::string("malformed message from the scheduler: ") + e.what());
    }
    read_loop();
  }));
}

void ClientCore::on_batch(const runtime::Message& m) {
  std::unique_lock lock(mu_);
  runtime::for_each_op(m, [&](runtime::OpReader& r) {
    switch (r.op()) {
      case Op::key_in_memory: {
        auto b = r.body<protocol::KeyInMemory>();
        if (auto it = keys_.find(b.key); it != keys_.end()) {
          it->second.status = KeyStatus::memory;
          it->second.holders = std::move(b.holders);
          it->second.nbytes = b.nbytes;
          if (r.frames().size() == 1) it->second.data = r.frames()[0];  // sent inline
          ++it->second.reports;
          settled_locked(it->first, it->second);
        }
        break;
      }
      case Op::key_lost: {  // its only holders left: the scheduler computes it again
        for (auto& k : r.body<protocol::Keys>().keys)
          if (auto it = keys_.find(k);
              it != keys_.end() && it->second.status == KeyStatus::memory && !it->second.data) {
            it->second.status = KeyStatus::pending;
            it->second.holders.clear();
            ++it->second.reports;
          }
        break;
      }
      case Op::key_erred: {
        auto b = r.body<protocol::KeyErred>();
        if (auto it = keys_.find(b.key); it != keys_.end()) {
          it->second.status = KeyStatus::erred;
          ++it->second.reports;
          it->second.message = std::move(b.message);
          it->second.blamed_key = std::move(b.blamed_key);
          it->second.cause = std::move(b.cause);
          it->second.exception_type = std::move(b.exception_type);
          it->second.worker = std::move(b.worker);
          it->second.worker_address = std::move(b.worker_address);
          settled_locked(it->first, it->second);
        }
        break;
      }
      case Op::key_cancelled: {
        auto b = r.body<protocol::KeysCancelled>();
        std::string why = b.reason.empty() ? "cancelled" : b.reason;
        if (why.rfind("cancelled", 0) != 0) why = "cancelled: " + why;
        for (auto& k : b.keys)
          if (auto it = keys_.find(k); it != keys_.end()) {
            it->second.status = KeyStatus::cancelled;
            ++it->second.reports;
            it->second.message = why;
            settled_locked(it->first, it->second);
          }
        break;
      }
      case Op::shutting_down:
        r.body<protocol::Empty>();
        shutdown_acked_ = true;
        break;
      case Op::scheduler_info_reply:
        take_reply(info_requests_, r);
        break;
      case Op::retire_workers_reply:
        take_reply(retire_requests_, r);
        break;
      case Op::rebalance_reply:
        take_reply(rebalance_requests_, r);
        break;
      default:
        throw runtime::SerializationError(
            fmt::format("unexpected operation {} from the scheduler", static_cast<int>(r.op())));
    }
  });
  lock.unlock();  // a woken waiter would only block on mu_ again
  cv_.notify_all();
}

void ClientCore::fail_all(const std::string& why) {
  std::lock_guard lock(mu_);
  if (broken_.empty()) broken_ = why;
  for (auto& [k, st] : keys_)
    if (st.status == KeyStatus::pending) {
      st.status = KeyStatus::lost;
      st.message = why;
      settled_locked(k, st);
    }
  cv_.notify_all();
}

void ClientCore::send(std::function<void(Outbox&)> add) {
  std::lock_guard lock(out_mu_);
  add_releases_locked();
  add(out_);
  post_flush_locked();
}

void ClientCore::post_flush_locked() {
  if (flush_posted_) return;
  flush_posted_ = true;
  // Coalesce everything queued before the io thread gets to it into one message. Right
  // after a wait in this client, the io thread lingers parked (Context::enable_driving):
  // the flush then leaves with this thread's next wait (a get() after a submit, the whole
  // chain of a submit loop as one message), or when the linger ends, within ~1-2 ms.
  // (Should the core be gone first, ~ClientCore sent what was left.)
  runtime::post_urgent(context_->urgent(), scheduler_->executor(),
                       guarded(*this, own_context_ != nullptr, [this] { flush(); }));
}

void ClientCore::add_releases_locked() {
  if (!releases_.empty()) out_.add(Op::release_keys, protocol::Keys{std::exchange(releases_, {})});
}

std::vector<Outbox::Outgoing> ClientCore::take_out_locked() {
  add_releases_locked();
  return out_.take();
}

void ClientCore::flush() {
  std::vector<Outbox::Outgoing> messages;
  {
    std::lock_guard lock(out_mu_);
    flush_posted_ = false;
    if ((out_.empty() && releases_.empty()) || !scheduler_) return;
    messages = take_out_locked();
  }
  write_out(std::move(messages));
}

void ClientCore::write_out(std::vector<Outbox::Outgoing> messages, std::function<void()> after_last) {
  const runtime::Limits& limits = context_->config().limits;
  std::vector<bool> sendable(messages.size());
  std::size_t writes = 0;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    auto why = comm::check_limits(messages[i].message, limits);
    sendable[i] = why.empty();
    if (sendable[i]) {
      ++writes;
      continue;
    }
    spdlog::warn("client: not sending a message to the scheduler: {}", why);
    fail_unsent(messages[i].carried_keys, "not sent to the scheduler: " + why);
  }
  if (writes == 0 && after_last) after_last();
  // The core may be gone when a write completes (see ~ClientCore): only the failure of the
  // keys needs it; after_last does not.
  auto fail = guarded(*this, own_context_ != nullptr,
                      [this](const std::vector<std::string>& keys, const std::string& why) {
                        fail_unsent(keys, why);
                      });
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (!sendable[i]) continue;
    std::function<void()> after = --writes == 0 ? after_last : nullptr;
    scheduler_->async_write(
        std::move(messages[i].message),
        [fail, keys = std::move(messages[i].carried_keys), after = std::move(after)](error_code ec) mutable {
          if (ec) {
            spdlog::debug("client: write to the scheduler failed: {}", ec.message());
            if (!keys.empty()) fail(keys, "not sent to the scheduler: " + ec.message());
          }
          if (after) after();
        });
  }
}

void ClientCore::fail_unsent(const std::vector<std::string>& keys, const std::string& why) {
  if (keys.empty()) return;
  {
    std::lock_guard lock(mu_);
    for (const auto& k : keys)
      if (auto it = keys_.find(k); it != keys_.end() && it->second.status == KeyStatus::pending) {
        auto& st = it->second;
        st.status = KeyStatus::erred;
        st.message = why;
        st.blamed_key = k;
        st.cause = why;
        ++st.reports;
        settled_locked(k, st);
      }
  }
  cv_.notify_all();
}

std::string ClientCore::new_key(const std::string& function) {
  std::lock_guard lock(mu_);
  return fmt::format(FMT_COMPILE("{}-{}-{}"), function, id_, ++counter_);
}

std::int64_t ClientCore::next_priority() {
  std::lock_guard lock(mu_);
  return ++priority_;
}

std::vector<std::shared_ptr<KeyRef>> ClientCore::submit(std::vector<protocol::TaskSpec> tasks,
                                                        std::vector<runtime::Frame> frames) {
  std::vector<std::shared_ptr<KeyRef>> refs;
  refs.reserve(tasks.size());
  for (auto& t : tasks) refs.push_back(hold(t.key));
  auto parts = split_graph(std::move(tasks), std::move(frames),
                           GraphSplitOptions::within(context_->config().limits));
  send([&](Outbox& out) {
    for (auto& part : parts) {
      auto carried = part.graph.wanted;
      out.add(Op::update_graph, part.graph, std::move(part.frames), std::move(carried));
    }
  });
  return refs;
}

std::shared_ptr<KeyRef> ClientCore::hold(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    auto& st = keys_[key];
    ++st.refs;
    if (!broken_.empty() && st.status == KeyStatus::pending) {
      st.status = KeyStatus::lost;
      st.message = broken_;
    }
  }
  return std::make_shared<KeyRef>(shared_from_this(), key);
}

void ClientCore::release(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    auto it = keys_.find(key);
    if (it == keys_.end() || --it->second.refs > 0) return;
    keys_.erase(it);
    if (!broken_.empty()) return;
  }
  std::lock_guard lock(out_mu_);
  releases_.push_back(key);
  // A release is not urgent: it leaves with the next message to the scheduler (a submission
  // right after a get(), say) or after release_delay_. On its own it costs the scheduler and
  // the worker holding the key a wake-up and a message each while the next task runs
  // (docs/measurements.md, "Releases ride with the next message").
  if (flush_posted_ || release_timer_set_) return;
  release_timer_set_ = true;
  asio::post(scheduler_->executor(),
             guarded(*this, own_context_ != nullptr, [this] { arm_release_timer(); }));
}

void ClientCore::set_release_delay(std::chrono::milliseconds delay) {
  std::lock_guard lock(out_mu_);
  release_delay_ = delay;
}

void ClientCore::arm_release_timer() {
  {
    std::lock_guard lock(out_mu_);
    release_timer_->expires_after(release_delay_);
  }
  release_timer_->async_wait(guarded(*this, own_context_ != nullptr, [this](error_code ec) {
    {
      std::lock_guard lock(out_mu_);
      release_timer_set_ = false;
    }
    if (!ec) flush();
  }));
}

namespace {
bool is_done(KeyStatus s) { return s != KeyStatus::pending; }
}  // namespace

template <class Pred>
bool ClientCore::block(std::unique_lock<std::mutex>& lock, Pred done, Deadline deadline) {
  using Clock = std::chrono::steady_clock;
  if (done()) return true;
  auto& context = *context_;
  if (context.config().client_drive) {
    const auto until = deadline.value_or(Clock::time_point::max());
    lock.unlock();  // the io thread may need mu_ to finish its handler and park
    auto drive = context.try_drive(until);
    lock.lock();
    // Past the deadline, what is ready still runs (up to kReadyHandlers): a wait_for(0) loop
    // makes progress.
    constexpr int kReadyHandlers = 16;
    for (int late = 0; drive && !done();) {
      const bool past = Clock::now() >= until;
      if (past && ++late > kReadyHandlers) return false;
      lock.unlock();
      const bool ran = past ? drive->poll_one() : drive->run_one_until(until);
      lock.lock();
      if (ran) continue;
      if (past) return false;
      if (context.io().stopped()) drive.reset();  // nothing runs any more: wait as before
    }
    if (drive) return true;
  }
  // Another thread drives, or none may: handlers wake this one. The io thread must not
  // linger meanwhile (it may be the one to run them).
  auto awake = context.keep_awake();
  if (!deadline) {
    cv_.wait(lock, done);
    return true;
  }
  return cv_.wait_until(lock, *deadline, done);
}

bool ClientCore::block_until(std::unique_lock<std::mutex>& lock, const std::function<bool()>& done,
                             Deadline deadline) {
  return block(lock, done, deadline);
}

bool ClientCore::wait(const std::string& key, std::optional<std::chrono::milliseconds> timeout) {
  std::unique_lock lock(mu_);
  auto pred = [&] {
    auto it = keys_.find(key);
    return it == keys_.end() || is_done(it->second.status);
  };
  if (!timeout) return block(lock, pred);
  return block(lock, pred, std::chrono::steady_clock::now() + *timeout);
}

KeyStatus ClientCore::status(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  return it == keys_.end() ? KeyStatus::lost : it->second.status;
}

std::pair<std::string, std::string> ClientCore::failure_origin(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it == keys_.end() || it->second.status != KeyStatus::erred) return {};
  return {it->second.blamed_key, it->second.cause};
}

std::size_t ClientCore::wait_any(const std::vector<std::string>& keys) {
  std::unique_lock lock(mu_);
  std::size_t found = keys.size();
  block(lock, [&] {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      auto it = keys_.find(keys[i]);
      if (it == keys_.end() || is_done(it->second.status)) {
        found = i;
        return true;
      }
    }
    return keys.empty();
  });
  return found;
}

void ClientCore::cancel(const std::vector<std::string>& keys, bool force) {
  send([&](Outbox& out) { out.add(Op::cancel_keys, protocol::CancelKeys{keys, force}); });
}

std::vector<KeyStatus> ClientCore::statuses(const std::vector<std::string>& keys) {
  std::vector<KeyStatus> out;
  out.reserve(keys.size());
  std::lock_guard lock(mu_);
  for (const auto& key : keys) {
    auto it = keys_.find(key);
    out.push_back(it == keys_.end() ? KeyStatus::lost : it->second.status);
  }
  return out;
}

// One request and its reply, matched by id in `waiting` (info_requests_, retire_requests_).
template <class Reply, class Request>
Reply ClientCore::request_reply(std::map<std::uint64_t, std::optional<Reply>>& waiting, Op op,
                                Request request,
                                std::optional<std::chrono::milliseconds> timeout,
                                std::string_view what) {
  {
    std::lock_guard lock(mu_);
    if (!broken_.empty()) throw comm::CommError(make_error_code(comm::errc::closed), broken_);
    request.request_id = ++info_counter_;
    waiting.emplace(request.request_id, std::nullopt);
  }
  const std::uint64_t id = request.request_id;
  send([&](Outbox& out) { out.add(op, request); });
  std::unique_lock lock(mu_);
  Deadline deadline;
  if (timeout) deadline = std::chrono::steady_clock::now() + *timeout;
  block(lock, [&] { return waiting.at(id).has_value() || !broken_.empty(); }, deadline);
  auto reply = std::move(waiting.at(id));
  waiting.erase(id);
  if (reply) return std::move(*reply);
  if (!broken_.empty()) throw comm::CommError(make_error_code(comm::errc::closed), broken_);
  throw comm::CommError(make_error_code(comm::errc::timeout),
                        fmt::format("the scheduler did not answer {} within {} ms", what,
                                    timeout.value_or(std::chrono::milliseconds(0)).count()));
}

protocol::SchedulerInfo ClientCore::scheduler_info(std::chrono::milliseconds timeout) {
  return request_reply(info_requests_, Op::scheduler_info, protocol::SchedulerInfoRequest{},
                       timeout, "scheduler_info");
}

protocol::RetireWorkersReply ClientCore::retire_workers(
    const std::vector<std::string>& workers, std::size_t count,
    std::optional<std::chrono::milliseconds> timeout) {
  return request_reply(retire_requests_, Op::retire_workers,
                       protocol::RetireWorkersRequest{0, workers, count}, timeout,
                       "retire_workers");
}

protocol::RebalanceReply ClientCore::rebalance(const std::vector<std::string>& keys,
                                               const std::vector<std::string>& workers,
                                               std::optional<std::chrono::milliseconds> timeout) {
  return request_reply(rebalance_requests_, Op::rebalance,
                       protocol::RebalanceRequest{0, keys, workers}, timeout, "rebalance");
}

runtime::Frame ClientCore::result(const std::string& key) { return results({key}).at(0); }

// A holder may leave between the scheduler's report and the fetch (a worker killed or lost):
// the scheduler then reports the key lost and computes it again (key_lost, then key_in_memory
// with its new holder), and the fetch is tried again, up to kFetchAttempts times.
std::vector<runtime::Frame> ClientCore::results(const std::vector<std::string>& keys) {
  std::map<std::string, runtime::Frame> got;
  std::vector<std::string> todo = keys;
  for (int attempt = 1;; ++attempt) {
    std::map<std::string, std::uint64_t> seen;  // the reports the fetched locations came from
    std::vector<protocol::MissingData> lost;     // holders that do not have their key
    fetch_results(todo, got, seen, lost);
    std::vector<std::string> missing;
    for (const auto& k : todo)
      if (!got.count(k)) missing.push_back(k);
    if (missing.empty()) break;
    if (attempt == kFetchAttempts)
      throw TaskError(missing.front(), "no worker holding the result could send it");
    report_missing(lost);
    await_news(missing, seen);
    todo = std::move(missing);
  }
  std::vector<runtime::Frame> out;
  out.reserve(keys.size());
  std::lock_guard lock(mu_);
  for (const auto& key : keys) {
    const auto& frame = got.at(key);
    if (auto st = keys_.find(key); st != keys_.end()) st->second.data = frame;
    out.push_back(frame);
  }
  return out;
}

void ClientCore::fetch_results(const std::vector<std::string>& keys,
                               std::map<std::string, runtime::Frame>& got,
                               std::map<std::string, std::uint64_t>& seen,
                               std::vector<protocol::MissingData>& lost) {
  std::map<std::string, std::vector<std::string>> by_holder;  // holder -> keys to fetch there
  std::map<std::string, std::vector<std::string>> alternatives;
  {
    std::unique_lock lock(mu_);
    for (const auto& key : keys) {
      block(lock, [&] {
        auto it = keys_.find(key);
        return it == keys_.end() || is_done(it->second.status);
      });
      auto it = keys_.find(key);
      if (it == keys_.end()) throw TaskError(key, "this client no longer holds the key");
      auto& st = it->second;
      if (st.status == KeyStatus::erred && !st.worker.empty())
        throw TaskError(key, st.message,
                        {st.blamed_key, st.cause, st.exception_type, st.worker, st.worker_address});
      if (st.status != KeyStatus::memory) throw TaskError(key, st.message);
      if (st.data) {
        got.emplace(key, *st.data);
        continue;
      }
      if (st.holders.empty()) throw TaskError(key, "the scheduler reported no worker holding it");
      by_holder[st.holders.front()].push_back(key);
      alternatives[key] = st.holders;
      seen[key] = st.reports;
    }
  }
  for (const auto& [holder, ks] : by_holder) {
    try_holder(holder, ks, got, lost, true);
    for (const auto& k : ks)  // keys the first holder did not give: try the others
      for (std::size_t i = 1; !got.count(k) && i < alternatives[k].size(); ++i)
        try_holder(alternatives[k][i], {k}, got, lost, false);
  }
}

// A holder that answered without a key, or is gone (refused, reset), does not have it: the
// scheduler is told (report_missing). One that did not answer in time may be frozen or
// partitioned and hold it still: the scheduler is not told, and get() errs if no news comes
// (recomputing on a frozen worker would only wait for it).
void ClientCore::try_holder(const std::string& holder, const std::vector<std::string>& keys,
                            std::map<std::string, runtime::Frame>& got,
                            std::vector<protocol::MissingData>& lost, bool warn) {
  bool gone = false, answered = false;
  try {
    fetch_from(holder, keys, got);
    answered = true;
  } catch (const comm::CommError& e) {
    gone = e.code() != comm::errc::timeout;
    if (warn) spdlog::warn("client: fetching from {} failed: {}", holder, e.what());
  } catch (const std::exception& e) {
    if (warn) spdlog::warn("client: fetching from {} failed: {}", holder, e.what());
  }
  for (const auto& k : keys)  // a request answered before a later one failed gave its keys
    if (!got.count(k) && (gone || answered)) lost.push_back(protocol::MissingData{"", k, holder});
}

// Tells the scheduler which holders it named do not have their keys (gone, or a copy lost
// with a spill file): it drops those replicas and computes a key again when none is left,
// which is the news await_news() waits for. Without this, a holder that is alive but lost
// the key would be asked until get() gave up.
void ClientCore::report_missing(const std::vector<protocol::MissingData>& reports) {
  if (reports.empty()) return;
  send([&](Outbox& out) {
    for (const auto& r : reports) out.add(Op::missing_data, r);
  });
}

void ClientCore::await_news(const std::vector<std::string>& keys,
                            const std::map<std::string, std::uint64_t>& seen) {
  std::unique_lock lock(mu_);
  for (const auto& key : keys) {
    auto changed = [&] {  // the next round of results() will see something new
      auto it = keys_.find(key);
      return it == keys_.end() || it->second.reports != seen.at(key) || it->second.data ||
             it->second.status != KeyStatus::memory;
    };
    block(lock, [&] { return changed() || !broken_.empty(); },
          std::chrono::steady_clock::now() + fetch_timeout_);
    if (changed()) continue;
    if (!broken_.empty())  // no news will come, and the holders it named are stale
      throw TaskError(key, "no worker holding the result could send it, and " + broken_);
    throw TaskError(key, fmt::format("no worker holding the result could send it, and the "
                                     "scheduler reported no change within {} ms",
                                     fetch_timeout_.count()));
  }
}

std::shared_ptr<ClientCore::WorkerLink> ClientCore::worker_link(const std::string& address) {
  std::lock_guard lock(mu_);
  auto& link = workers_[address];
  if (!link) link = std::make_shared<WorkerLink>();
  return link;
}

void ClientCore::exchange_with_worker(
    const std::string& address, std::chrono::milliseconds allowed,
    const std::function<void(const comm::CommPtr&, const TimeLeft&)>& exchange) {
  auto link = worker_link(address);
  std::lock_guard lock(link->mu);
  auto awake = context_->keep_awake();  // the io thread does the exchange: it must not linger
  // A worker that accepts but never answers (stopped, wedged) would hold the caller forever:
  // the connect, the write and the read share one deadline.
  const auto deadline = std::chrono::steady_clock::now() + allowed;
  const TimeLeft left = [deadline] {
    using std::chrono::milliseconds;
    const auto now = std::chrono::steady_clock::now();
    return std::max(std::chrono::duration_cast<milliseconds>(deadline - now), milliseconds(1));
  };
  // A kept connection may be to a worker that has since died (and maybe restarted on the
  // same address): it fails on first use, and the exchange is tried once more on a fresh one.
  const bool kept = link->comm && !link->comm->closed();
  for (int round = kept ? 0 : 1; round < 2; ++round) {
    if (!link->comm || link->comm->closed()) {
      // The scheduler listed this worker: if nothing listens there, it is gone.
      comm::ConnectOptions options;
      options.timeout = left();
      options.retry_refused = false;
      link->comm = comm::connect(*registry_, address, std::move(options));
    }
    try {
      return exchange(link->comm, left);
    } catch (const std::exception& e) {
      link->comm->abort();
      link->comm.reset();
      // A worker that did not answer in time (frozen, partitioned) had its whole deadline.
      const auto* comm_error = dynamic_cast<const comm::CommError*>(&e);
      if (round == 1 || (comm_error && comm_error->code() == comm::errc::timeout)) throw;
      spdlog::debug("client: the kept connection to {} failed ({}); connecting again", address,
                    e.what());
    }
  }
}

std::chrono::milliseconds ClientCore::time_allowed(std::uint64_t bytes) const {
  constexpr std::uint64_t kBytesPerMs = 100'000;  // 100 MB/s: slow for any of our transports
  return fetch_timeout_ + std::chrono::milliseconds(bytes / kBytesPerMs);
}

void ClientCore::shutdown(std::chrono::milliseconds timeout) {
  send([](Outbox& out) { out.add(Op::shutdown, protocol::Empty{}); });
  std::unique_lock lock(mu_);
  if (!block(lock, [&] { return shutdown_acked_ || !broken_.empty(); },
             std::chrono::steady_clock::now() + timeout))
    throw comm::CommError(make_error_code(comm::errc::timeout),
                          fmt::format("the scheduler did not acknowledge shutdown within {} ms",
                                      timeout.count()));
}

}  // namespace taskwire::client
