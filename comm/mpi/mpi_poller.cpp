#include <taskwire/comm/mpi/mpi_comm.hpp>
#include <taskwire/comm/mpi/mpi_poller.hpp>
#include <taskwire/comm/core/framing.hpp>
#include <taskwire/comm/mpi/mpi_poller_detail.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace taskwire::comm::mpi {
using namespace detail;
namespace {

std::mutex g_mu;
std::shared_ptr<MpiPoller> g_poller;
MpiEnvironment* g_env = nullptr;

}  // namespace

// ---- instance and lifecycle ------------------------------------------------------------

std::shared_ptr<MpiPoller> MpiPoller::instance() {
  auto* env = MpiEnvironment::current();
  std::lock_guard lock(g_mu);
  if (!env) return nullptr;
  if (g_poller && g_env == env) return g_poller;
  if (env->is_shut_down()) return nullptr;
  g_poller = std::make_shared<MpiPoller>(*env);
  g_env = env;
  // The hook keeps the poller alive until the environment has drained it.
  env->add_shutdown_hook([p = g_poller](MpiEnvironment::Clock::time_point deadline) {
    p->drain(deadline);
  });
  return g_poller;
}

const char* MpiPoller::no_environment_text() noexcept {
  return "mpi:// needs MPI: create a taskwire::mpi::MpiEnvironment (once per process, "
         "e.g. first thing in main) before connecting or listening on mpi:// addresses";
}

MpiPoller::MpiPoller(MpiEnvironment& env)
    : env_(&env), board_(env.wake_board()),
      mutex_(env.mutex()), comm_(env.comm()), rank_(env.rank()),
      size_(env.size()),
      max_id_(static_cast<std::uint32_t>((env.tag_ub() - kFirstTag - 1) / 2)) {}

void MpiPoller::attach(PollDriver* driver) {
  std::lock_guard lock(*mutex_);
  drivers_.push_back(driver);
}

void MpiPoller::detach(PollDriver* driver) noexcept {
  std::lock_guard lock(*mutex_);
  std::erase(drivers_, driver);
}

void MpiPoller::wake_drivers() noexcept {
  for (auto* d : drivers_) d->wake();
}

void MpiPoller::add_listener(std::uint32_t port, std::shared_ptr<ListenerEntry> entry) {
  std::lock_guard lock(*mutex_);
  if (finished_)
    throw CommError(make_error_code(errc::closed),
                    fmt::format("cannot listen on {}: MPI is shutting down", entry->address));
  if (!listeners_.emplace(port, std::move(entry)).second)
    throw CommError(make_error_code(errc::io),
                    fmt::format("{} is already in use by another listener",
                                MpiLocation{rank_, port}.str()));
}

void MpiPoller::remove_listener(std::uint32_t port, const ListenerEntry* entry) noexcept {
  std::lock_guard lock(*mutex_);
  auto it = listeners_.find(port);
  if (it != listeners_.end() && it->second.get() == entry) listeners_.erase(it);
}

// ---- operations from comms and connectors ---------------------------------------------

void MpiPoller::connect(const MpiLocation& to, asio::any_io_executor executor,
                        const runtime::Config& config, std::shared_ptr<bool> owner,
                        RawConnectHandler handler) {
  Locked lock(*this);
  auto fail_now = [&](errc e) {
    asio::post(executor, [h = std::move(handler), e] { h(make_error_code(e), nullptr); });
  };
  if (finished_) return fail_now(errc::closed);
  if (to.rank >= size_) {
    spdlog::error("cannot connect to {}: the job has ranks 0..{}", to.str(), size_ - 1);
    return fail_now(errc::bad_address);
  }
  if (to.rank != rank_ && env_->said_goodbye(to.rank)) return fail_now(errc::closed);
  if (env_->is_lost(to.rank)) return fail_now(errc::peer_lost);
  if (ids_in_use_.size() > max_id_) {
    spdlog::error("cannot connect to {}: all {} connection ids of rank {} are in use",
                  to.str(), max_id_ + 1, rank_);
    return fail_now(errc::io);
  }
  std::uint32_t id;
  do {
    id = next_id_;
    next_id_ = next_id_ >= max_id_ ? 0 : next_id_ + 1;
  } while (ids_in_use_.count(id));
  ids_in_use_.insert(id);

  auto c = std::make_shared<Connection>();
  c->peer = to.rank;
  c->id = id;
  c->connector = true;
  c->send_tag = kFirstTag + 2 * static_cast<int>(id);
  c->recv_tag = c->send_tag + 1;
  c->state = Connection::State::connecting;
  c->local_address = fmt::format("mpi://{}", rank_);
  c->peer_address = to.str();
  c->limits = config.limits;
  c->max_chunk_bytes = config.mpi.max_chunk_bytes;
  c->strand = asio::make_strand(executor);
  c->owner = std::move(owner);
  c->on_connect = std::move(handler);
  c->pending_comm = std::make_shared<MpiComm>(shared_from_this(), c, *c->strand,
                                              c->local_address, c->peer_address);
  c->comm = c->pending_comm;
  routes_[route_key(c->peer, c->recv_tag)] = c;
  enqueue_control(c, kHello, to.port);
  wake_drivers();
}

void MpiPoller::submit(const ConnectionPtr& c, Message message, WriteHandler handler,
                       std::shared_ptr<Comm> keep) {
  Locked lock(*this);
  auto reject = [&](errc e) {
    post(c, [h = std::move(handler), keep = std::move(keep), e] { h(make_error_code(e)); });
  };
  if (c->aborted) return reject(errc::aborted);
  if (finished_ || c->peer_closed || c->peer_gone || c->close_queued) return reject(errc::closed);
  if (auto why = check_limits(message, c->limits); !why.empty()) {
    reject(errc::protocol);
    return fail(c, errc::protocol, "refusing to send: " + why);
  }
  OutMessage out;
  const std::size_t n = message.frames.size();
  std::uint64_t packed = 0;
  std::vector<char> sep_flags(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t len = message.frames[i].size();
    if (len <= kPackFrameMax && packed + len <= kMaxPackedBytes) {
      packed += len;
    } else {
      sep_flags[i] = 1;
      out.separate.push_back(static_cast<std::uint32_t>(i));
    }
  }
  out.chunk_bytes = std::max<std::uint64_t>(1, c->max_chunk_bytes);
  out.head.resize(kDataHeadFixed + 8 * n + packed);
  char* p = out.head.data();
  *p++ = static_cast<char>(kData);
  store_le<std::uint64_t>(p, n);
  store_le<std::uint64_t>(p + 8, out.chunk_bytes);
  p += 16;
  for (std::size_t i = 0; i < n; ++i, p += 8)
    store_le<std::uint64_t>(p, (std::uint64_t{message.frames[i].size()} << 1) | std::uint64_t(sep_flags[i]));
  for (std::size_t i = 0; i < n; ++i) {
    if (sep_flags[i] || message.frames[i].empty()) continue;
    std::memcpy(p, message.frames[i].data(), message.frames[i].size());
    p += message.frames[i].size();
  }
  out.message = std::move(message);
  out.handler = std::move(handler);
  out.keep = std::move(keep);
  c->sendq.push_back(std::move(out));
  if (c->sendq.size() == 1) pump_sends(c);
  wake_drivers();  // a reply is likely: poll eagerly
}

void MpiPoller::close(const ConnectionPtr& c) {
  Locked lock(*this);
  if (c->retired || drained_) return;
  queue_close(c);
  maybe_retire(c);
  wake_drivers();
}

void MpiPoller::abort(const ConnectionPtr& c) noexcept {
  try {
    Locked lock(*this);
    if (c->retired || c->aborted || drained_) return;
    c->aborted = true;
    fail_queued_writes(c, make_error_code(errc::aborted), true);
    for (auto& in : c->recvq) in.discard = true;
    queue_close(c);
    maybe_retire(c);
    wake_drivers();
  } catch (const std::exception& e) {
    spdlog::error("mpi: aborting the comm to {} failed: {}", c->peer_address, e.what());
  }
}

// ---- the turn --------------------------------------------------------------------------

thread_local std::vector<MpiPoller::Delivery>* MpiPoller::t_deliveries_ = nullptr;
thread_local const asio::execution_context* MpiPoller::t_context_ = nullptr;
thread_local std::uint64_t MpiPoller::t_outbox_runs_ = 0;

TurnResult MpiPoller::turn(const asio::execution_context* here) {
  std::vector<Delivery> ready;
  struct Scope {  // deliveries go to `ready` for the whole turn, dispatch included
    std::vector<Delivery>* saved_d = t_deliveries_;
    const asio::execution_context* saved_c = t_context_;
    ~Scope() {
      t_deliveries_ = saved_d;
      t_context_ = saved_c;
    }
  } scope;
  t_deliveries_ = here ? &ready : nullptr;
  t_context_ = here;
  TurnResult r;
  {
    Locked lock(*this);
    if (drained_) return {false, false, true};
    r.progress = turn_locked();
    note_requests(r);
  }
  // Each is a connection's run_outbox(): inline when its strand is free, else queued behind
  // what the strand holds. That saves the io_context a pass per message, which on this VM
  // costs an epoll_wait system call (1.8 us). Handlers run here may queue more (the
  // completion of a write they start): those follow, after the handler returned. If one
  // throws, the rest are posted.
  for (std::size_t i = 0; i < ready.size(); ++i) {
    Delivery d = std::move(ready[i]);
    const auto runs = t_outbox_runs_;
    try {
      asio::dispatch(d.strand, std::move(d.f));
    } catch (...) {
      t_deliveries_ = nullptr;
      for (++i; i < ready.size(); ++i) asio::post(ready[i].strand, std::move(ready[i].f));
      throw;
    }
    if (t_outbox_runs_ == runs) r.deferred = true;
  }
  return r;
}

bool MpiPoller::message_waiting() {
  Locked lock(*this);
  if (drained_) return false;
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

bool MpiPoller::turn_locked() {
  bool progress = complete_requests();
  progress |= receive_incoming();
  for (int r : env_->check_peers()) {
    on_peer_gone(r, errc::peer_lost);
    progress = true;
  }
  return progress;
}

// What the driver's next wait depends on: receives in flight move with this rank's own
// progress (a rendezvous receive copies the data itself); a send in flight completes once the
// receiver took it, and a rendezvous send that MPI holds back (no room on the way) leaves only
// in a later MPI call of ours, when the peer may already sleep: so turns wake the peers of
// sends in flight (a shared-memory load when they are awake). Without it a message waited for
// the peer's idle timer (50 ms, taskwire-bench dag). A receive still in flight two turns
// after it was posted may wait for its sender (a rendezvous the receiver does not pull
// itself): its sender is woken too. Each request wakes its peer at its first turns, then at
// most every kRewakeEvery, so a receiver that holds a sender back is not woken at every turn.
void MpiPoller::note_requests(TurnResult& r) {
  if (pending_.empty()) return;  // the common turn: no clock read
  const auto now = Clock::now();
  auto wake_for = [&](Pending& p) {
    if (!board_ || !p.conn || now < p.next_wake) return;
    if (p.turns > 2) p.next_wake = now + kRewakeEvery;
    board_->rewake(p.conn->peer);
  };
  for (auto& p : pending_) {
    ++p.turns;
    if (p.kind != Pending::send) {
      r.receiving = true;
      if (p.turns > 2) wake_for(p);
      continue;
    }
    r.sending = true;
    if (board_ && board_->reaches_by_network(p.conn->peer)) r.sending_remote = true;
    // A message waits behind this send: another one of the queue, or the rest of this one's
    // chunks beyond the window of sends in flight.
    if (p.conn->sendq.size() > 1 || !p.conn->sendq.front().all_posted()) r.sends_blocked = true;
    wake_for(p);
  }
}

bool MpiPoller::track(MPI_Request req, Pending p) {
  requests_.push_back(req);
  pending_.push_back(std::move(p));
  return true;
}

bool MpiPoller::complete_requests() {
  if (requests_.empty()) return false;
  const int n = static_cast<int>(requests_.size());
  indices_.resize(requests_.size());
  statuses_.resize(requests_.size());
  int outcount = 0;
  const int rc = MPI_Testsome(n, requests_.data(), &outcount, indices_.data(), statuses_.data());
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
    spdlog::error("mpi: MPI_Testsome failed: {}", mpi_text(rc));
    return false;
  }
  if (outcount == MPI_UNDEFINED || outcount == 0) return false;
  std::vector<std::pair<Pending, MPI_Status>> done;
  done.reserve(static_cast<std::size_t>(outcount));
  for (int i = 0; i < outcount; ++i) {
    auto idx = static_cast<std::size_t>(indices_[static_cast<std::size_t>(i)]);
    MPI_Status st = statuses_[static_cast<std::size_t>(i)];
    if (rc != MPI_ERR_IN_STATUS) st.MPI_ERROR = MPI_SUCCESS;
    done.emplace_back(std::move(pending_[idx]), st);
  }
  // Completed requests are now MPI_REQUEST_NULL: compact both arrays.
  std::size_t w = 0;
  for (std::size_t r = 0; r < requests_.size(); ++r) {
    if (requests_[r] == MPI_REQUEST_NULL) continue;
    if (w != r) {
      requests_[w] = requests_[r];
      pending_[w] = std::move(pending_[r]);
    }
    ++w;
  }
  requests_.resize(w);
  pending_.resize(w);
  for (auto& [p, st] : done) on_completed(p, st);
  return true;
}

void MpiPoller::on_completed(Pending& p, const MPI_Status& status) {
  const ConnectionPtr& c = p.conn;
  if (p.kind == Pending::discard || !c) return;
  if (status.MPI_ERROR != MPI_SUCCESS) {
    if (p.kind == Pending::send) --c->sendq.front().outstanding;
    else if (p.kind == Pending::recv_chunk) --p.in->outstanding;
    else p.in->head_done = true;
    fail(c, errc::io, "MPI request failed: " + mpi_text(status.MPI_ERROR));
    return;
  }
  if (p.kind != Pending::send) taken_from(c->peer);
  switch (p.kind) {
    case Pending::send:
      --c->sendq.front().outstanding;
      pump_sends(c);
      break;
    case Pending::recv_head:
      on_head(c, *p.in);
      drain_matched(c);
      break;
    case Pending::recv_chunk:
      --p.in->outstanding;
      deliver_ready(c);
      break;
    case Pending::discard:
      break;
  }
}

bool MpiPoller::receive_incoming() {
  bool any = false;
  for (int i = 0; i < kMaxProbesPerTurn; ++i) {
    int found = 0;
    MPI_Message msg;
    MPI_Status st;
    const int rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &found, &msg, &st);
    if (rc != MPI_SUCCESS) {
      spdlog::error("mpi: MPI_Improbe failed: {}", mpi_text(rc));
      break;
    }
    if (!found) break;
    any = true;
    MPI_Count count = 0;
    MPI_Get_count_c(&st, MPI_BYTE, &count);
    if (st.MPI_TAG == MpiEnvironment::kControlTag) {
      env_->take_goodbye(msg, st);
      on_peer_gone(st.MPI_SOURCE, errc::closed);
      continue;
    }
    auto c = route(st.MPI_SOURCE, st.MPI_TAG);
    if (!c) {
      spdlog::debug("mpi: discarding a stale {}-byte message from rank {} tag {}", count,
                    st.MPI_SOURCE, st.MPI_TAG);
      discard_message(msg, count, nullptr);
      continue;
    }
    on_matched(c, msg, count);
  }
  return any;
}

// ---- sending -----------------------------------------------------------------------------

void MpiPoller::enqueue_control(const ConnectionPtr& c, Kind kind, std::uint32_t arg) {
  OutMessage& m = c->sendq.emplace_back();
  m.head.push_back(static_cast<char>(kind));
  if (kind == kHello) {
    m.head.resize(5);
    store_le<std::uint32_t>(m.head.data() + 1, arg);
  }
  m.is_close = kind == kClose;
  if (c->sendq.size() == 1) pump_sends(c);
}

void MpiPoller::queue_close(const ConnectionPtr& c) {
  if (c->close_queued || c->peer_gone) return;
  c->close_queued = true;
  enqueue_control(c, kClose);
}

void MpiPoller::pump_sends(const ConnectionPtr& c) {
  while (!c->sendq.empty()) {
    OutMessage& m = c->sendq.front();
    if (!m.head_posted) {
      if (c->peer_gone) {
        fail_queued_writes(c, make_error_code(errc::closed), true);
        if (c->sendq.empty() || !c->sendq.front().head_posted) break;
        continue;
      }
      m.head_posted = true;
      if (m.is_close) c->close_sent = true;
      const bool synchronous = needs_confirmation(*c, m);
      if (!post_send(c, m, m.head.data(), m.head.size(), synchronous)) return;
    }
    while (m.next_frame < m.separate.size() && m.outstanding < kChunkWindow) {
      const Frame& f = m.message.frames[m.separate[m.next_frame]];
      const std::uint64_t n = std::min<std::uint64_t>(m.chunk_bytes, f.size() - m.next_offset);
      const char* p = f.data() + m.next_offset;
      m.next_offset += n;
      if (m.next_offset == f.size()) {
        ++m.next_frame;
        m.next_offset = 0;
      }
      if (!post_send(c, m, p, n)) return;
    }
    if (m.outstanding > 0 || !m.all_posted()) return;
    if (m.handler || m.keep) {
      post(c, [h = std::move(m.handler), keep = std::move(m.keep)] {
        if (h) h({});
      });
    }
    c->sendq.pop_front();
  }
  maybe_retire(c);
}

// Eager sends (below UCX_RNDV_THRESH) complete before the peer received them: the bytes wait
// in MPI's buffers, and a receiver that holds messages back (Connection::holding) would not
// hold a writer of small messages back at all. So once the data sent since the last
// synchronous send passes the bound / kConfirmShare, the next data head goes with
// MPI_Issend. That completes only once the peer's poller received it (MPI_Imrecv; holding it
// matched is not enough, docs/security.md), and as messages on one tag do not overtake each
// other and the poller receives a connection's messages in order, all earlier ones were
// received too. Its handler, and the messages queued behind it, wait for that.
bool MpiPoller::needs_confirmation(Connection& c, const OutMessage& m) noexcept {
  if (m.head.empty() || m.head[0] != static_cast<char>(kData)) return false;
  const std::uint64_t head = held_cost(m.head.size());
  std::uint64_t chunks = 0;
  for (auto i : m.separate) chunks += held_cost(m.message.frames[i].size());
  const std::uint64_t every = std::max<std::uint64_t>(1, c.limits.max_queued_bytes / kConfirmShare);
  if (c.unconfirmed + head + chunks <= every) {
    c.unconfirmed += head + chunks;
    return false;
  }
  c.unconfirmed = chunks;  // they follow the synchronous head: it does not confirm them
  return true;
}

bool MpiPoller::post_send(const ConnectionPtr& c, OutMessage& m, const char* data,
                          std::uint64_t n, bool synchronous) {
  MPI_Request req;
  int rc;
  if (n <= INT_MAX) {
    const int count = static_cast<int>(n);
    rc = synchronous ? MPI_Issend(data, count, MPI_BYTE, c->peer, c->send_tag, comm_, &req)
                     : MPI_Isend(data, count, MPI_BYTE, c->peer, c->send_tag, comm_, &req);
  } else {
    const auto count = static_cast<MPI_Count>(n);
    rc = synchronous ? MPI_Issend_c(data, count, MPI_BYTE, c->peer, c->send_tag, comm_, &req)
                     : MPI_Isend_c(data, count, MPI_BYTE, c->peer, c->send_tag, comm_, &req);
  }
  if (rc != MPI_SUCCESS) {
    c->peer_gone = true;  // nothing more will reach it
    fail(c, errc::io, "MPI_Isend failed: " + mpi_text(rc));
    return false;
  }
  int done = 0;
  MPI_Test(&req, &done, MPI_STATUS_IGNORE);  // eager sends complete at once
  if (board_) board_->wake(c->peer);  // the peer's poller may be asleep: the message is there to find
  if (!done) {
    ++m.outstanding;
    track(req, Pending{c, nullptr, Pending::send, nullptr});
  }
  return true;
}

void MpiPoller::fail_queued_writes(const ConnectionPtr& c, error_code ec, bool in_flight) {
  auto report = [&](OutMessage& m) {
    if (!m.handler && !m.keep) return;
    post(c, [h = std::move(m.handler), keep = std::move(m.keep), ec] {
      if (h) h(ec);
    });
    m.handler = nullptr;
  };
  std::deque<OutMessage> kept;
  for (auto& m : c->sendq) {
    if (m.head_posted) {
      // In flight: its requests must complete before its frames go. Finish posting it so the
      // peer stays in step, unless the peer is gone.
      if (in_flight) report(m);
      if (c->peer_gone) m.next_frame = m.separate.size();
      kept.push_back(std::move(m));
    } else if (m.is_close && !c->peer_gone) {
      kept.push_back(std::move(m));
    } else {
      if (m.is_close) c->close_sent = true;  // the peer is gone: it will not be sent
      report(m);
    }
  }
  c->sendq.swap(kept);
  // `kept` now holds the dropped ones' leftovers; their frames may go (no request uses them).
}

// ---- lifecycle of connections ----------------------------------------------------------

void MpiPoller::post(const ConnectionPtr& c, std::function<void()> f) {
  if (!c->strand || !c->owner || !*c->owner) return graveyard_.push_back(std::move(f));
  // Completions go through the connection's outbox, so they run in the order they were
  // queued however the outbox run is scheduled (posted, or dispatched after a turn).
  c->outbox.push_back(std::move(f));
  if (c->outbox_scheduled) return;
  c->outbox_scheduled = true;
  auto run = [self = shared_from_this(), c] { self->run_outbox(c); };
  // Dispatched after the turn only on the driver's own io_context: that one outlives the
  // turn (its thread is in it); another backend's may be stopped once the lock is released.
  if (t_deliveries_ &&
      &asio::query(c->strand->get_inner_executor(), asio::execution::context) == t_context_)
    t_deliveries_->push_back({*c->strand, std::move(run)});
  else
    asio::post(*c->strand, std::move(run));
}

void MpiPoller::run_outbox(const ConnectionPtr& c) {
  ++t_outbox_runs_;
  std::vector<std::function<void()>> batch;
  {
    Locked lock(*this);
    batch.swap(c->outbox);
    c->outbox_scheduled = false;
  }
  std::size_t i = 0;
  try {
    for (; i < batch.size(); ++i) batch[i]();
  } catch (...) {
    // A throwing handler: what follows it still runs, later, in order.
    Locked lock(*this);
    c->outbox.insert(c->outbox.begin(), std::make_move_iterator(batch.begin() + i + 1),
                     std::make_move_iterator(batch.end()));
    if (!c->outbox.empty() && !c->outbox_scheduled && c->strand) {
      c->outbox_scheduled = true;
      asio::post(*c->strand, [self = shared_from_this(), c] { self->run_outbox(c); });
    }
    throw;
  }
}

void MpiPoller::detach_owner(const std::shared_ptr<bool>& owner) noexcept {
  try {
    Locked lock(*this);
    *owner = false;
    std::erase_if(listeners_, [&](const auto& l) { return l.second->owner == owner; });
    std::vector<ConnectionPtr> mine;
    for (auto& [key, c] : routes_)
      if (c->owner == owner) mine.push_back(c);
    for (auto& c : mine) {
      // Nothing runs for this owner any more: what it did not run yet goes (it may hold the
      // comm, which holds the connection).
      for (auto& f : c->outbox) graveyard_.push_back(std::move(f));
      c->outbox.clear();
      // The owner's io_context may be destroyed next, taking the strand service with it,
      // while the connection itself stays here until its close is sent (or the drain at
      // shutdown): a strand destroyed then is a use after free (ASan, 20-cycle test).
      c->strand.reset();
      if (c->state == Connection::State::connecting) fail_connect(c, make_error_code(errc::aborted));
      if (c->aborted || drained_) continue;
      c->aborted = true;
      fail_queued_writes(c, make_error_code(errc::aborted), true);
      for (auto& in : c->recvq) in.discard = true;
      queue_close(c);
      maybe_retire(c);
    }
  } catch (const std::exception& e) {
    spdlog::error("mpi: detaching a backend failed: {}", e.what());
  }
}

void MpiPoller::end_comm(const ConnectionPtr& c, error_code ec) {
  if (auto comm = c->comm.lock()) {
    post(c, [comm = std::move(comm), ec]() mutable { comm->on_end(ec); });
  }
}

void MpiPoller::fail_connect(const ConnectionPtr& c, error_code ec) {
  if (!c->on_connect && !c->pending_comm) return;
  post(c, [h = std::move(c->on_connect), comm = std::move(c->pending_comm), ec]() mutable {
    comm.reset();
    if (h) h(ec, nullptr);
  });
  c->on_connect = nullptr;
  c->pending_comm = nullptr;
}

void MpiPoller::fail(const ConnectionPtr& c, errc code, const std::string& why) {
  if (c->aborted) return;  // already failed or aborted: said once
  spdlog::error("mpi: comm {} <-> {} failed: {}; aborting that comm", c->local_address,
                c->peer_address, why);
  c->aborted = true;
  const auto ec = make_error_code(code);
  if (c->state == Connection::State::connecting) fail_connect(c, ec);
  else end_comm(c, ec);
  fail_queued_writes(c, ec, true);
  for (auto& in : c->recvq) in.discard = true;
  queue_close(c);
  maybe_retire(c);
}

void MpiPoller::maybe_retire(const ConnectionPtr& c) {
  if (c->retired) return;
  if (!c->sendq.empty() || !c->recvq.empty() || !c->matched.empty()) return;
  if (!(c->peer_closed || c->peer_gone)) return;
  if (!(c->close_sent || c->peer_gone)) return;
  c->retired = true;
  auto it = routes_.find(route_key(c->peer, c->recv_tag));
  if (it != routes_.end() && it->second == c) routes_.erase(it);
  if (c->connector) ids_in_use_.erase(c->id);
  fail_connect(c, make_error_code(errc::closed));
}

// ---- shutdown ----------------------------------------------------------------------------

void MpiPoller::drain(Clock::time_point deadline) {
  {
    Locked lock(*this);
    finished_ = true;
    draining_ = true;
    listeners_.clear();
    std::vector<ConnectionPtr> all;
    for (auto& [key, c] : routes_) all.push_back(c);
    for (auto& c : all) {
      if (c->state == Connection::State::connecting) fail_connect(c, make_error_code(errc::closed));
      else if (!c->peer_closed) end_comm(c, make_error_code(errc::closed));
      queue_close(c);  // after the queued writes: they are flushed first
      drain_matched(c);  // nothing is held back any more
      maybe_retire(c);
    }
  }
  MpiBackoff backoff(runtime::Config::from_env().mpi);
  for (;;) {
    bool progress, idle = true;
    {
      Locked lock(*this);
      progress = turn_locked();
      idle = requests_.empty();
      for (auto& [key, c] : routes_)
        if (!c->sendq.empty() || !c->matched.empty()) idle = false;
      for (int r = 0; r < size_ && !idle; ++r)
        if (env_->is_lost(r)) idle = true;  // the environment ends the job: stop waiting
      if (idle || Clock::now() >= deadline) {
        if (!idle)
          spdlog::error("mpi: rank {} shut down with {} MPI requests still pending", rank_,
                        requests_.size());
        drained_ = true;
        std::vector<ConnectionPtr> all;
        for (auto& [key, c] : routes_) all.push_back(c);
        for (auto& c : all) fail_connect(c, make_error_code(errc::closed));
        routes_.clear();
        break;
      }
    }
    if (progress) backoff.reset();
    else backoff.sleep();
  }
}

}  // namespace taskwire::comm::mpi
