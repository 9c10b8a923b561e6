#include <taskwire/worker/peer_fetcher.hpp>

#include <taskwire/runtime/batch.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace taskwire::worker {
namespace {
using protocol::Op;
}  // namespace

// ---- fetching ----

void PeerFetcher::gather(GatherDep request) {
  auto& link = peers_[request.worker];
  if (!link) link = std::make_shared<PeerLink>(request.worker, core_.strand);
  const auto id = ++next_request_id_;
  if (request.wait) link->pending_waits.insert(id);
  if (link->comm && !link->comm->closed()) return send_request(link, id, std::move(request.keys));
  link->pending.emplace_back(id, std::move(request.keys));
  if (!link->connecting) connect_peer(link);
}

void PeerFetcher::connect_peer(const std::shared_ptr<PeerLink>& link) {
  link->connecting = true;
  // Requests sent on a comm that closed before its read error was handled (a push or a
  // fetch found it closed first) are asked again on the new one: the old comm's error is
  // ignored once it is replaced, and nothing else would answer or fail them.
  for (auto it = link->outstanding.rbegin(); it != link->outstanding.rend(); ++it)
    link->pending.emplace_front(it->first, std::move(it->second));
  link->outstanding.clear();
  link->pending_waits.merge(link->waits);
  link->sent_at.clear();
  link->comm.reset();
  comm::ConnectOptions options;
  options.timeout = core_.options.peer_connect_timeout;
  options.handshake = core_.handshake;
  comm::async_connect(
      core_.registry, link->address, std::move(options),
      [this, held = core_.hold(), link](error_code ec, std::string detail, comm::CommPtr comm) {
        asio::post(core_.strand, [this, held, link, ec, detail = std::move(detail),
                                  comm = std::move(comm)]() mutable {
          link->connecting = false;
          if (core_.closing) {
            if (comm) comm->abort();
            return;
          }
          if (ec) return fail_link(*link, detail);
          link->comm = comm;
          while (!link->pending.empty()) {
            auto [id, keys] = std::move(link->pending.front());
            link->pending.pop_front();
            send_request(link, id, std::move(keys));
          }
          read_peer(link, comm);
        });
      });
}

void PeerFetcher::send_request(const std::shared_ptr<PeerLink>& link, std::uint64_t id,
                               std::vector<Key> keys) {
  runtime::BatchWriter w;
  const bool wait = link->pending_waits.erase(id) > 0;
  w.add(Op::get_data, protocol::GetData{id, keys, wait});
  // The peer's silence counts from the first request it owes a reply to.
  if (link->outstanding.size() == link->waits.size()) note_fetch_progress(*link);
  if (wait) link->waits.insert(id);
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

void PeerFetcher::note_fetch_progress(PeerLink& link) {
  link.quiet_since = std::chrono::steady_clock::now();
  link.bytes_seen = link.comm ? link.comm->bytes_received() : 0;
}

void PeerFetcher::watch_fetches(const std::shared_ptr<PeerLink>& link) {
  const auto timeout = core_.options.fetch_timeout;
  if (link->watching || timeout.count() <= 0) return;
  link->watching = true;
  link->fetch_deadline.expires_after(std::max(timeout / 4, std::chrono::milliseconds(1)));
  // Weak: the link owns the timer, and a strong capture would keep both alive in the queue.
  std::weak_ptr<PeerLink> weak_link = link;
  link->fetch_deadline.async_wait([this, weak = core_.owner, weak_link](error_code ec) {
    auto held = weak.lock();
    auto link = weak_link.lock();
    if (!held || !link) return;
    link->watching = false;
    if (!ec && !core_.closing) check_fetch_deadline(link);
  });
}

// On the strand (the timer's executor).
void PeerFetcher::check_fetch_deadline(const std::shared_ptr<PeerLink>& link) {
  // Answered, already failed, or only waiting requests outstanding (sending the next request
  // watches again).
  if (link->outstanding.size() == link->waits.size() || !link->comm) return;
  if (link->comm->bytes_received() != link->bytes_seen) note_fetch_progress(*link);
  const auto quiet = std::chrono::steady_clock::now() - link->quiet_since;
  if (quiet < core_.options.fetch_timeout) return watch_fetches(link);
  fail_link(*link, fmt::format("nothing received for {} ms with {} request(s) outstanding "
                               "(fetch_timeout {} ms)",
                               std::chrono::duration_cast<std::chrono::milliseconds>(quiet).count(),
                               link->outstanding.size(), core_.options.fetch_timeout.count()));
}

void PeerFetcher::read_peer(const std::shared_ptr<PeerLink>& link, const comm::CommPtr& comm) {
  // Weak, as the scheduler link's read: the comm keeps its handler, the worker the comm.
  std::weak_ptr<comm::Comm> weak_comm = comm;
  comm->async_read([this, weak = core_.owner, link, weak_comm](error_code ec, runtime::Message m) {
    auto held = weak.lock();
    auto comm = weak_comm.lock();
    if (!held || !comm) return;
    asio::post(core_.strand, [this, held, link, comm, ec, m = std::move(m)]() mutable {
      on_peer_message(link, comm, ec, std::move(m));
    });
  });
}

void PeerFetcher::on_peer_message(const std::shared_ptr<PeerLink>& link,
                                   const comm::CommPtr& comm, error_code ec,
                                   runtime::Message message) {
  if (core_.closing || link->comm != comm) return;  // closed, or an older connection
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
      if (dashboard_.recording())
        dashboard_.record_transfer(link->address, done.arrived_at - done.sent_at, reply.keys,
                                   r.frames());
      done.worker = link->address;
      done.wait = link->waits.erase(reply.request_id) > 0;
      for (std::size_t i = 0; i < reply.keys.size(); ++i)
        done.data.emplace_back(std::move(reply.keys[i]), r.frames()[i]);
      done.missing = std::move(reply.missing);
      events.emplace_back(std::move(done));
    });
  } catch (const std::exception& e) {
    spdlog::warn("worker {}: malformed reply from peer {}: {}; closing that comm", core_.name,
                 link->address, e.what());
    if (!events.empty()) actions_.handle(std::move(events));
    return fail_link(*link, fmt::format("malformed reply: {}", e.what()));
  }
  actions_.handle(std::move(events));
  if (!core_.closing && link->comm == comm) read_peer(link, comm);
}

// The link is unusable: drop its comm (the next GatherDep reconnects) and tell the state
// machine, if anything was asked of it, so the keys are fetched elsewhere or reported missing.
void PeerFetcher::fail_link(PeerLink& link, const std::string& reason) {
  if (link.comm) link.comm->abort();
  link.comm.reset();
  const bool asked = !link.pending.empty() || !link.outstanding.empty();
  link.pending.clear();
  link.outstanding.clear();
  link.waits.clear();
  link.pending_waits.clear();
  link.sent_at.clear();
  if (!asked) return;
  spdlog::warn("worker {}: cannot fetch from {}: {}", core_.name, link.address, reason);
  std::vector<Event> events;
  events.emplace_back(GatherDepFailed{link.address, reason, ""});
  actions_.handle(std::move(events));
}

void PeerFetcher::close_all() {
  for (auto& [address, link] : peers_) {
    link->fetch_deadline.cancel();
    if (link->comm) link->comm->abort();
  }
  peers_.clear();
}

}  // namespace taskwire::worker
