#include <taskwire/comm/mpi/mpi_comm.hpp>
#include <taskwire/comm/mpi/mpi_poller.hpp>
#include <taskwire/comm/core/framing.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace taskwire::comm::mpi {
namespace {

std::mutex g_mu;
std::shared_ptr<MpiPoller> g_poller;
runtime::MpiEnvironment* g_env = nullptr;

constexpr int kMaxProbesPerTurn = 64;
constexpr unsigned kChunkWindow = 16;  // chunk Isends of one message in flight at once

std::uint64_t route_key(int source, int tag) {
  return (std::uint64_t{static_cast<std::uint32_t>(source)} << 32) |
         static_cast<std::uint32_t>(tag);
}

std::string mpi_text(int rc) { return runtime::MpiEnvironment::error_string(rc); }

}  // namespace

// ---- instance and lifecycle ------------------------------------------------------------

std::shared_ptr<MpiPoller> MpiPoller::instance() {
  auto* env = runtime::MpiEnvironment::current();
  std::lock_guard lock(g_mu);
  if (!env) return nullptr;
  if (g_poller && g_env == env) return g_poller;
  if (env->is_shut_down()) return nullptr;
  g_poller = std::make_shared<MpiPoller>(*env);
  g_env = env;
  // The hook keeps the poller alive until the environment has drained it.
  env->add_shutdown_hook([p = g_poller](runtime::MpiEnvironment::Clock::time_point deadline) {
    p->drain(deadline);
  });
  return g_poller;
}

const char* MpiPoller::no_environment_text() noexcept {
  return "mpi:// needs MPI: create a taskwire::runtime::MpiEnvironment (once per process, "
         "e.g. first thing in main) before connecting or listening on mpi:// addresses";
}

MpiPoller::MpiPoller(runtime::MpiEnvironment& env)
    : env_(&env), mutex_(env.mutex()), comm_(env.comm()), rank_(env.rank()),
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
  put_u64(p, n);
  put_u64(p + 8, out.chunk_bytes);
  p += 16;
  for (std::size_t i = 0; i < n; ++i, p += 8)
    put_u64(p, (std::uint64_t{message.frames[i].size()} << 1) | std::uint64_t(sep_flags[i]));
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

TurnResult MpiPoller::turn() {
  Locked lock(*this);
  if (drained_) return {false, false, true};
  TurnResult r;
  r.progress = turn_locked();
  r.busy = !requests_.empty();
  return r;
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
    if (st.MPI_TAG == runtime::MpiEnvironment::kControlTag) {
      discard_message(msg, count, nullptr);
      env_->note_goodbye(st.MPI_SOURCE);
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

// ---- receiving ---------------------------------------------------------------------------

ConnectionPtr MpiPoller::route(int source, int tag) {
  if (tag < kFirstTag) return nullptr;
  auto it = routes_.find(route_key(source, tag));
  if (it != routes_.end()) return it->second;
  const int rel = tag - kFirstTag;
  if (rel % 2 == 1) return nullptr;  // to a connection of ours that is gone
  // A connection being opened by `source`: its first message must be a HELLO.
  auto c = std::make_shared<Connection>();
  c->peer = source;
  c->id = static_cast<std::uint32_t>(rel / 2);
  c->recv_tag = tag;
  c->send_tag = tag + 1;
  c->state = Connection::State::accepting;
  c->limits = default_limits_;
  c->peer_address = fmt::format("mpi://{}", source);
  c->local_address = fmt::format("mpi://{}", rank_);
  routes_[route_key(source, tag)] = c;
  return c;
}

bool MpiPoller::can_receive(const ConnectionPtr& c) {
  if (!c->recvq.empty() && !c->recvq.back().head_done) return false;  // what follows is unknown
  if (!c->recvq.empty() && !c->recvq.back().all_matched()) return true;  // a chunk: go on
  // A new message. Hold it matched but not received while the reader lags (backpressure:
  // a rendezvous sender then waits, eager data stays in MPI's own buffers).
  if (draining_ || c->aborted || c->unread.load() <= kMaxUnreadBytes) return true;
  c->holding = true;
  if (c->unread.load() > kMaxUnreadBytes) return false;
  c->holding = false;  // the reader caught up meanwhile
  return true;
}

void MpiPoller::resume(const ConnectionPtr& c) {
  Locked lock(*this);
  if (!c->holding.exchange(false) || drained_) return;
  drain_matched(c);
  deliver_ready(c);
  wake_drivers();
}

void MpiPoller::on_matched(const ConnectionPtr& c, MPI_Message msg, MPI_Count count) {
  if (c->matched.empty() && can_receive(c)) {
    try_receive(c, msg, count);
  } else {
    c->matched.push_back({msg, count});
  }
}

void MpiPoller::drain_matched(const ConnectionPtr& c) {
  while (!c->matched.empty() && can_receive(c)) {
    Matched m = c->matched.front();
    c->matched.pop_front();
    try_receive(c, m.message, m.count);
  }
}

bool MpiPoller::try_receive(const ConnectionPtr& c, MPI_Message& msg, MPI_Count count) {
  if (!c->recvq.empty() && !c->recvq.back().all_matched()) {
    receive_chunk(c, c->recvq.back(), msg, count);
  } else if (c->failed && count != 1) {
    discard_message(msg, count, c);  // out of step after a malformed head: wait for a CLOSE
  } else {
    receive_head(c, msg, count);
  }
  return true;
}

int MpiPoller::start_receive(void* buf, MPI_Count count, MPI_Message& msg, MPI_Request& req) {
  if (count <= INT_MAX) return MPI_Imrecv(buf, static_cast<int>(count), MPI_BYTE, &msg, &req);
  return MPI_Imrecv_c(buf, count, MPI_BYTE, &msg, &req);
}

void MpiPoller::discard_message(MPI_Message& msg, MPI_Count count, ConnectionPtr owner) {
  std::shared_ptr<char[]> scratch;
  if (count > 0) scratch.reset(new char[static_cast<std::size_t>(count)]);
  MPI_Request req;
  const int rc = start_receive(scratch.get(), count, msg, req);
  if (rc != MPI_SUCCESS) {
    spdlog::error("mpi: MPI_Imrecv (discard) failed: {}", mpi_text(rc));
    return;
  }
  int done = 0;
  MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  if (!done) track(req, Pending{std::move(owner), nullptr, Pending::discard, std::move(scratch)});
}

void MpiPoller::receive_head(const ConnectionPtr& c, MPI_Message& msg, MPI_Count count) {
  const auto bound = max_head_bytes(c->limits.max_frames);
  if (count < 1 || static_cast<std::uint64_t>(count) > bound) {
    discard_message(msg, count, c);
    c->failed = true;
    fail(c, errc::protocol,
         fmt::format("a message head of {} bytes (at most {} with max_frames {})", count, bound,
                     c->limits.max_frames));
    return;
  }
  InMessage& in = c->recvq.emplace_back();
  in.discard = c->aborted;
  in.head.resize(static_cast<std::size_t>(count));
  MPI_Request req;
  const int rc =
      MPI_Imrecv(in.head.data(), static_cast<int>(count), MPI_BYTE, &msg, &req);
  if (rc != MPI_SUCCESS) {
    in.head_done = true;
    in.discard = true;
    return fail(c, errc::io, "MPI_Imrecv failed: " + mpi_text(rc));
  }
  int done = 0;
  MPI_Test(&req, &done, MPI_STATUS_IGNORE);  // small heads are usually here already
  if (done) on_head(c, in);
  else track(req, Pending{c, &in, Pending::recv_head, nullptr});
}

void MpiPoller::receive_chunk(const ConnectionPtr& c, InMessage& in, MPI_Message& msg,
                              MPI_Count count) {
  const std::uint32_t fi = in.separate[in.next_sep];
  const std::uint64_t len = in.sep_len[in.next_sep];
  const std::uint64_t expected = std::min(in.chunk_bytes, len - in.next_offset);
  char* dst = nullptr;
  if (!in.discard) dst = in.frames[fi].mutable_data() + in.next_offset;
  in.next_offset += expected;
  if (in.next_offset >= len) {
    ++in.next_sep;
    in.next_offset = 0;
  }
  if (static_cast<std::uint64_t>(count) != expected) {
    discard_message(msg, count, c);
    in.discard = true;
    c->failed = true;
    return fail(c, errc::protocol,
                fmt::format("a chunk of {} bytes where {} were announced", count, expected));
  }
  std::shared_ptr<char[]> scratch;
  if (in.discard && count > 0) {
    scratch.reset(new char[static_cast<std::size_t>(count)]);
    dst = scratch.get();
  }
  MPI_Request req;
  const int rc = start_receive(dst, count, msg, req);
  if (rc != MPI_SUCCESS) {
    in.discard = true;
    return fail(c, errc::io, "MPI_Imrecv failed: " + mpi_text(rc));
  }
  ++in.outstanding;
  track(req, Pending{c, &in, Pending::recv_chunk, std::move(scratch)});
}

void MpiPoller::on_head(const ConnectionPtr& c, InMessage& in) {
  in.head_done = true;
  std::vector<char> head = std::move(in.head);
  in.head = {};
  const std::size_t n = head.size();
  const auto violation = [&](std::string why, bool parseable) {
    in.discard = true;
    in.kind = kData;
    if (!parseable) {
      in.separate.clear();
      in.sep_len.clear();
      c->failed = true;
    }
    fail(c, errc::protocol, why);
    deliver_ready(c);
  };
  in.kind = static_cast<Kind>(static_cast<unsigned char>(head[0]));
  switch (in.kind) {
    case kHello:
      if (n != 5 || c->state != Connection::State::accepting)
        return violation("an unexpected HELLO", false);
      in.hello_port = get_u32(head.data() + 1);
      break;
    case kAccept:
    case kRefused:
      if (n != 1 || c->state != Connection::State::connecting)
        return violation("an unexpected connection reply", false);
      break;
    case kClose:
      if (n != 1) return violation("a malformed CLOSE", false);
      break;
    case kData: {
      if (c->state == Connection::State::accepting)
        return violation("data before the HELLO", false);
      if (n < kDataHeadFixed) return violation("a truncated data head", false);
      const std::uint64_t nframes = get_u64(head.data() + 1);
      const std::uint64_t chunk = get_u64(head.data() + 9);
      const auto& lim = c->limits;
      if (nframes > lim.max_frames)
        return violation(fmt::format("a message of {} frames, limit is {}", nframes,
                                     lim.max_frames), false);
      if (n < kDataHeadFixed + 8 * nframes || chunk == 0)
        return violation("a truncated data head", false);
      const char* table = head.data() + kDataHeadFixed;
      std::uint64_t total = 0, packed = 0;
      std::string broken;
      for (std::uint64_t i = 0; i < nframes; ++i) {
        const std::uint64_t entry = get_u64(table + 8 * i);
        const std::uint64_t len = entry >> 1;
        if (entry & 1) in.separate.push_back(static_cast<std::uint32_t>(i));
        else packed += len;
        if (broken.empty() && len > lim.max_frame_bytes)
          broken = fmt::format("frame {} of {} bytes, limit is {}", i, len, lim.max_frame_bytes);
        total += len;
        if (broken.empty() && total > lim.max_message_bytes)
          broken = fmt::format("a message of more than {} bytes, limit is {}", total,
                               lim.max_message_bytes);
        if (packed > kMaxPackedBytes) return violation("a malformed data head", false);
      }
      if (kDataHeadFixed + 8 * nframes + packed != n)
        return violation("a data head whose size does not match its frame table", false);
      in.chunk_bytes = chunk;
      in.sep_len.reserve(in.separate.size());
      for (auto i : in.separate) in.sep_len.push_back(get_u64(table + 8 * i) >> 1);
      if (!broken.empty()) {
        // The frame table is sound: follow its chunks without keeping them.
        in.discard = true;
        fail(c, errc::protocol, broken);
        break;
      }
      if (in.discard) break;
      const char* packed_bytes = table + 8 * nframes;
      in.frames.reserve(nframes);
      for (std::uint64_t i = 0; i < nframes; ++i) {
        const std::uint64_t entry = get_u64(table + 8 * i);
        const std::uint64_t len = entry >> 1;
        if (entry & 1) {
          in.frames.push_back(Frame::allocate(len));
        } else {
          in.frames.push_back(Frame::copy_of(packed_bytes, len));
          packed_bytes += len;
        }
      }
      break;
    }
    default:
      return violation(fmt::format("a message of unknown kind {}", int(head[0])), false);
  }
  deliver_ready(c);
}

void MpiPoller::deliver_ready(const ConnectionPtr& c) {
  while (!c->recvq.empty() && c->recvq.front().complete()) {
    InMessage in = std::move(c->recvq.front());
    c->recvq.pop_front();
    switch (in.kind) {
      case kData:
        if (!in.discard && !c->aborted) {
          if (auto comm = c->comm.lock()) {
            Message m(std::move(in.frames));
            c->unread += m.total_bytes();
            post(c, [comm = std::move(comm), m = std::move(m)]() mutable {
              comm->on_message(std::move(m));
            });
          }
        }
        break;
      case kHello:
        on_hello(c, in.hello_port);
        break;
      case kAccept:
        if (c->state == Connection::State::connecting) {
          c->state = Connection::State::open;
          post(c, [h = std::move(c->on_connect), comm = std::move(c->pending_comm)]() mutable {
            h({}, std::move(comm));
          });
          c->on_connect = nullptr;
        }
        break;
      case kRefused:
        c->peer_closed = true;
        c->close_queued = c->close_sent = true;  // the peer kept no state: no CLOSE
        fail_connect(c, make_error_code(errc::refused));
        break;
      case kClose:
        on_peer_close(c);
        break;
    }
  }
  maybe_retire(c);
}

void MpiPoller::on_hello(const ConnectionPtr& c, std::uint32_t port) {
  auto it = listeners_.find(port);
  if (finished_ || it == listeners_.end() || !*it->second->owner) {
    spdlog::debug("mpi: refusing a connection from rank {} to port {}: nothing listens there",
                  c->peer, port);
    c->state = Connection::State::refused;
    c->peer_closed = true;
    c->close_queued = true;  // REFUSED stands for CLOSE
    enqueue_control(c, kRefused);
    c->close_sent = true;
    return;
  }
  const auto& entry = it->second;
  c->state = Connection::State::open;
  c->limits = entry->limits;
  c->max_chunk_bytes = entry->max_chunk_bytes;
  c->local_address = entry->address;
  c->strand = asio::make_strand(entry->executor);
  c->owner = entry->owner;
  auto comm = std::make_shared<MpiComm>(shared_from_this(), c, *c->strand, c->local_address,
                                        c->peer_address);
  c->comm = comm;
  enqueue_control(c, kAccept);
  post(c, [on = entry->on_comm, comm = std::move(comm)]() mutable { on(std::move(comm)); });
}

void MpiPoller::on_peer_close(const ConnectionPtr& c) {
  if (c->state == Connection::State::accepting) {
    // A CLOSE without a HELLO: an abandoned attempt whose HELLO we refused. Nothing to do.
    c->peer_closed = true;
    c->close_queued = c->close_sent = true;
    return;
  }
  c->peer_closed = true;
  end_comm(c, make_error_code(errc::closed));
  fail_queued_writes(c, make_error_code(errc::closed), false);
  queue_close(c);
}

void MpiPoller::on_peer_gone(int rank, errc why) {
  const auto ec = make_error_code(why);
  std::vector<ConnectionPtr> affected;
  for (auto& [key, c] : routes_)
    if (c->peer == rank) affected.push_back(c);
  for (auto& c : affected) {
    c->peer_gone = true;
    if (c->state == Connection::State::connecting) {
      fail_connect(c, ec);
    } else if (!c->peer_closed) {
      end_comm(c, ec);
    }
    c->peer_closed = true;
    c->close_queued = true;
    fail_queued_writes(c, ec, true);
    for (auto& in : c->recvq) in.discard = true;
    maybe_retire(c);
  }
}

// ---- sending -----------------------------------------------------------------------------

void MpiPoller::enqueue_control(const ConnectionPtr& c, Kind kind, std::uint32_t arg) {
  OutMessage& m = c->sendq.emplace_back();
  m.head.push_back(static_cast<char>(kind));
  if (kind == kHello) {
    m.head.resize(5);
    put_u32(m.head.data() + 1, arg);
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
      if (!post_send(c, m, m.head.data(), m.head.size())) return;
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

bool MpiPoller::post_send(const ConnectionPtr& c, OutMessage& m, const char* data,
                          std::uint64_t n) {
  MPI_Request req;
  int rc;
  if (n <= INT_MAX)
    rc = MPI_Isend(data, static_cast<int>(n), MPI_BYTE, c->peer, c->send_tag, comm_, &req);
  else
    rc = MPI_Isend_c(data, static_cast<MPI_Count>(n), MPI_BYTE, c->peer, c->send_tag, comm_,
                     &req);
  if (rc != MPI_SUCCESS) {
    c->peer_gone = true;  // nothing more will reach it
    fail(c, errc::io, "MPI_Isend failed: " + mpi_text(rc));
    return false;
  }
  int done = 0;
  MPI_Test(&req, &done, MPI_STATUS_IGNORE);  // eager sends complete at once
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
  if (c->strand && c->owner && *c->owner) asio::post(*c->strand, std::move(f));
  else graveyard_.push_back(std::move(f));
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
  runtime::MpiBackoff backoff(runtime::Config::from_env().mpi);
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

// ---- PollDriver --------------------------------------------------------------------------

PollDriver::PollDriver(std::shared_ptr<MpiPoller> poller, asio::any_io_executor executor,
                       runtime::MpiPollConfig config, bool own_thread)
    : poller_(std::move(poller)), strand_(asio::make_strand(executor)), timer_(strand_),
      backoff_(config), own_thread_(own_thread) {}

PollDriver::~PollDriver() {
  stopped_ = true;
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
    else thread_.join();
  }
}

void PollDriver::start() {
  poller_->attach(this);
  if (own_thread_) {
    thread_ = std::thread([this] { thread_loop(); });
    return;
  }
  asio::post(strand_, [self = shared_from_this()] { self->run(); });
}

void PollDriver::stop() noexcept {
  if (stopped_.exchange(true)) return;
  poller_->detach(this);
  try {
    if (own_thread_) {
      {
        std::lock_guard lock(sleep_mu_);
      }
      sleep_cv_.notify_all();
      if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
      return;
    }
    asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
  } catch (...) {
  }
}

void PollDriver::wake() noexcept {
  kicked_ = true;
  if (sleeping_.exchange(false)) {
    try {
      if (own_thread_) {
        {
          std::lock_guard lock(sleep_mu_);
        }
        sleep_cv_.notify_one();
        return;
      }
      asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
    } catch (...) {
    }
  }
}

void PollDriver::thread_loop() {
  while (!stopped_) {
    const TurnResult r = poller_->turn();
    if (r.finished) return;
    if (r.progress || kicked_.exchange(false)) backoff_.reset();
    auto wait = backoff_.next();
    if (r.busy) wait = std::min(wait, MpiPoller::kBusySleepCap);
    if (wait.count() == 0) continue;
    std::unique_lock lock(sleep_mu_);
    sleeping_ = true;
    sleep_cv_.wait_for(lock, wait, [this] { return kicked_.load() || stopped_.load(); });
    sleeping_ = false;
  }
}

void PollDriver::run() {
  if (stopped_) return;
  const TurnResult r = poller_->turn();
  if (r.finished) return;  // MPI is shut down: nothing left to poll
  if (r.progress || kicked_.exchange(false)) backoff_.reset();
  auto wait = backoff_.next();
  if (r.busy) wait = std::min(wait, MpiPoller::kBusySleepCap);
  if (wait.count() > 0) {
    sleeping_ = true;
    if (kicked_.load()) {  // a wake() raced with the decision to sleep
      sleeping_ = false;
      wait = std::chrono::microseconds(0);
    }
  }
  auto self = shared_from_this();
  if (wait.count() == 0) {
    asio::post(strand_, [self] { self->run(); });
    return;
  }
  timer_.expires_after(wait);
  timer_.async_wait([self](error_code) {
    self->sleeping_ = false;
    self->run();
  });
}

}  // namespace taskwire::comm::mpi
