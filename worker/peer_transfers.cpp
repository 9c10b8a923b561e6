// Data between workers: fetching dependencies from peers (GatherDep -> get_data over a
// connection kept per peer) and answering peers' and clients' get_data on the listener.
#include <taskwire/worker/worker_server_impl.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace taskwire::worker {
namespace {
using protocol::Op;
}  // namespace

// ---- fetching ----

void Worker::Impl::gather(GatherDep request) {
  auto& link = peers_[request.worker];
  if (!link) link = std::make_shared<PeerLink>(request.worker, strand_);
  const auto id = ++next_request_id_;
  if (link->comm && !link->comm->closed()) return send_request(link, id, std::move(request.keys));
  link->pending.emplace_back(id, std::move(request.keys));
  if (!link->connecting) connect_peer(link);
}

void Worker::Impl::connect_peer(const std::shared_ptr<PeerLink>& link) {
  link->connecting = true;
  // Requests sent on a comm that closed before its read error was handled (a push or a
  // fetch found it closed first) are asked again on the new one: the old comm's error is
  // ignored once it is replaced, and nothing else would answer or fail them.
  for (auto it = link->outstanding.rbegin(); it != link->outstanding.rend(); ++it)
    link->pending.emplace_front(it->first, std::move(it->second));
  link->outstanding.clear();
  link->sent_at.clear();
  link->comm.reset();
  comm::ConnectOptions options;
  options.timeout = options_.peer_connect_timeout;
  options.handshake = handshake_;
  auto self = shared_from_this();
  comm::async_connect(
      registry_, link->address, std::move(options),
      [self, link](error_code ec, std::string detail, comm::CommPtr comm) {
        asio::post(self->strand_, [self, link, ec, detail = std::move(detail),
                                   comm = std::move(comm)]() mutable {
          link->connecting = false;
          if (self->closing_) {
            if (comm) comm->abort();
            return;
          }
          if (ec) return self->fail_link(*link, detail);
          link->comm = comm;
          while (!link->pending.empty()) {
            auto [id, keys] = std::move(link->pending.front());
            link->pending.pop_front();
            self->send_request(link, id, std::move(keys));
          }
          self->read_peer(link, comm);
        });
      });
}

void Worker::Impl::send_request(const std::shared_ptr<PeerLink>& link, std::uint64_t id,
                                std::vector<Key> keys) {
  runtime::BatchWriter w;
  w.add(Op::get_data, protocol::GetData{id, keys});
  // The peer's silence counts from the first request it owes a reply to.
  if (link->outstanding.empty()) note_fetch_progress(*link);
  link->outstanding.emplace(id, std::move(keys));
  link->sent_at[id] = steady_seconds();
  // A failed write aborts the comm; the pending read reports it.
  link->comm->async_write(w.take(), [](error_code) {});
  watch_fetches(link);
}

// ---- the fetch deadline ----
// A peer that stopped answering (SIGSTOP, a partition) fails no read: without a deadline its
// dependents, and a gather slot, would wait forever. The deadline is on inactivity: every
// reply, and on tcp every byte of one, restarts it, so a big transfer that progresses lives.

void Worker::Impl::note_fetch_progress(PeerLink& link) {
  link.quiet_since = std::chrono::steady_clock::now();
  link.bytes_seen = link.comm ? link.comm->bytes_received() : 0;
}

void Worker::Impl::watch_fetches(const std::shared_ptr<PeerLink>& link) {
  if (link->watching || options_.fetch_timeout.count() <= 0) return;
  link->watching = true;
  const auto interval = std::max(options_.fetch_timeout / 4, std::chrono::milliseconds(1));
  link->fetch_deadline.expires_after(interval);
  // Weak: the link owns the timer, and a strong capture would keep both alive in the queue.
  std::weak_ptr<Impl> weak = shared_from_this();
  std::weak_ptr<PeerLink> weak_link = link;
  link->fetch_deadline.async_wait([weak, weak_link](error_code ec) {
    auto self = weak.lock();
    auto link = weak_link.lock();
    if (!self || !link) return;
    link->watching = false;
    if (!ec && !self->closing_) self->check_fetch_deadline(link);
  });
}

// On the strand (the timer's executor).
void Worker::Impl::check_fetch_deadline(const std::shared_ptr<PeerLink>& link) {
  if (link->outstanding.empty() || !link->comm) return;  // answered, or already failed
  if (link->comm->bytes_received() != link->bytes_seen) note_fetch_progress(*link);
  const auto quiet = std::chrono::steady_clock::now() - link->quiet_since;
  if (quiet < options_.fetch_timeout) return watch_fetches(link);
  fail_link(*link, fmt::format("nothing received for {} ms with {} request(s) outstanding "
                               "(fetch_timeout {} ms)",
                               std::chrono::duration_cast<std::chrono::milliseconds>(quiet).count(),
                               link->outstanding.size(), options_.fetch_timeout.count()));
}

void Worker::Impl::read_peer(const std::shared_ptr<PeerLink>& link, const comm::CommPtr& comm) {
  std::weak_ptr<Impl> weak = shared_from_this();  // see read_scheduler()
  std::weak_ptr<comm::Comm> weak_comm = comm;
  comm->async_read([weak, link, weak_comm](error_code ec, runtime::Message m) {
    auto self = weak.lock();
    auto comm = weak_comm.lock();
    if (!self || !comm) return;
    asio::post(self->strand_, [self, link, comm, ec, m = std::move(m)]() mutable {
      self->on_peer_message(link, comm, ec, std::move(m));
    });
  });
}

void Worker::Impl::on_peer_message(const std::shared_ptr<PeerLink>& link,
                                   const comm::CommPtr& comm, error_code ec,
                                   runtime::Message message) {
  if (closing_ || link->comm != comm) return;  // closed, or an older connection
  if (ec)
    return fail_link(*link, fmt::format("the comm to {} failed: {}", link->address, ec.message()));
  std::vector<Event> events;
  try {
    runtime::for_each_op(message, [&](runtime::OpReader& r) {
      if (r.op() != Op::data_reply)
        throw runtime::SerializationError(
            fmt::format("unexpected operation {} (expected data_reply)", static_cast<int>(r.op())));
      auto reply = r.body<protocol::DataReply>();
      if (reply.keys.size() != r.frames().size())
        throw runtime::SerializationError(fmt::format(
            "data_reply lists {} keys but carries {} frames", reply.keys.size(), r.frames().size()));
      if (link->outstanding.erase(reply.request_id) == 0)
        throw runtime::SerializationError(
            fmt::format("data_reply to unknown request {}", reply.request_id));
      note_fetch_progress(*link);
      GatherDepDone done;
      done.arrived_at = steady_seconds();
      done.sent_at = done.arrived_at;
      if (auto sent = link->sent_at.find(reply.request_id); sent != link->sent_at.end()) {
        done.sent_at = sent->second;
        link->sent_at.erase(sent);
      }
      if (recorder_)
        record_transfer(*link, done.arrived_at - done.sent_at, reply.keys, r.frames());
      done.worker = link->address;
      for (std::size_t i = 0; i < reply.keys.size(); ++i)
        done.data.emplace_back(std::move(reply.keys[i]), r.frames()[i]);
      done.missing = std::move(reply.missing);
      events.emplace_back(std::move(done));
    });
  } catch (const std::exception& e) {
    spdlog::warn("worker {}: malformed reply from peer {}: {}; closing that comm", name_,
                 link->address, e.what());
    if (!events.empty()) handle(std::move(events));
    return fail_link(*link, fmt::format("malformed reply: {}", e.what()));
  }
  handle(std::move(events));
  if (!closing_ && link->comm == comm) read_peer(link, comm);
}

// The link is unusable: drop its comm (the next GatherDep reconnects) and tell the state
// machine, if anything was asked of it, so the keys are fetched elsewhere or reported missing.
void Worker::Impl::fail_link(PeerLink& link, const std::string& reason) {
  if (link.comm) link.comm->abort();
  link.comm.reset();
  const bool asked = !link.pending.empty() || !link.outstanding.empty();
  link.pending.clear();
  link.outstanding.clear();
  link.sent_at.clear();
  if (!asked) return;
  spdlog::warn("worker {}: cannot fetch from {}: {}", name_, link.address, reason);
  std::vector<Event> events;
  events.emplace_back(GatherDepFailed{link.address, reason, ""});
  handle(std::move(events));
}

// ---- serving get_data (and update_data: client_data.cpp) ----

void Worker::Impl::on_accept(comm::CommPtr comm) {
  if (!served_.add(comm)) return comm->abort();
  serve(std::move(comm));
}

// One request batch at a time per comm, answered from the data store on the comm's own
// strand (the store is thread-safe), so serving never waits for the worker's strand. The next
// request is read once the reply's write handler ran: a peer that asks faster than it reads
// the replies then waits in its own requests, and this worker's queue to it stays within
// the comm's bound (comm.hpp, "Bounded queues").
void Worker::Impl::serve(comm::CommPtr comm) {
  std::weak_ptr<Impl> weak = shared_from_this();  // see read_scheduler()
  std::weak_ptr<comm::Comm> weak_comm = comm;
  comm->async_read([weak, weak_comm](error_code ec, runtime::Message m) {
    auto self = weak.lock();
    auto comm = weak_comm.lock();
    if (!self || !comm) return;
    if (!ec && self->answer(comm, m)) return;
    self->served_.remove(comm);
  });
}

bool Worker::Impl::answer(const comm::CommPtr& comm, const runtime::Message& request) {
  runtime::BatchWriter reply;
  std::vector<ClientData> updates;
  try {
    runtime::for_each_op(request, [&](runtime::OpReader& r) {
      if (r.op() == Op::update_data) return take_client_data(r, updates);  // client_data.cpp
      if (r.op() != Op::get_data)
        throw runtime::SerializationError(
            fmt::format("unexpected operation {} (expected get_data)", static_cast<int>(r.op())));
      auto get = r.body<protocol::GetData>();
      auto lookup = data_->get_many(get.keys);
      protocol::DataReply body;
      body.request_id = get.request_id;
      body.missing = std::move(lookup.missing);
      std::vector<runtime::Frame> frames;
      frames.reserve(lookup.found.size());
      for (auto& [key, frame] : lookup.found) {
        body.keys.push_back(std::move(key));
        frames.push_back(std::move(frame));
      }
      reply.add(Op::data_reply, body, std::move(frames));
    });
  } catch (const std::exception& e) {
    spdlog::warn("worker {}: malformed batch from {}: {}; closing that comm", name_,
                 comm->peer_address(), e.what());
    comm->abort();
    return false;
  }
  if (!updates.empty())
    store_client_data(comm, std::move(updates), std::move(reply));
  else
    reply_then_serve(comm, std::move(reply));
  return true;
}

// The next request on `comm` is read once the reply's write handler ran (see serve()).
void Worker::Impl::reply_then_serve(const comm::CommPtr& comm, runtime::BatchWriter reply) {
  if (reply.empty()) return serve(comm);
  std::weak_ptr<Impl> weak = shared_from_this();
  std::weak_ptr<comm::Comm> weak_comm = comm;
  comm->async_write(reply.take(), [weak, weak_comm](error_code ec) {
    auto self = weak.lock();
    auto comm = weak_comm.lock();
    if (!self || !comm) return;
    if (!ec) return self->serve(comm);
    self->served_.remove(comm);  // a failed write aborted the comm
  });
}

}  // namespace taskwire::worker
