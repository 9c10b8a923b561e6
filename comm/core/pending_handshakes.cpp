#include <taskwire/comm/core/pending_handshakes.hpp>

#include <taskwire/comm/core/address.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <vector>

namespace taskwire::comm {
namespace {
constexpr std::size_t kMaxHostsNamed = 8;  // a summary names this many hosts at most
}  // namespace

struct PendingHandshakes::Entry {
  std::uint64_t seq = 0;
  std::function<void()> abort;
  std::string host, peer_address;
  bool evicted = false;  // mu_
};

PendingHandshakes::PendingHandshakes(asio::any_io_executor executor, std::size_t max_pending)
    : summary_timer_(std::move(executor)), max_pending_(std::max<std::size_t>(1, max_pending)) {}

// The oldest pending comm of the host with the most in handshake, counting the newcomer; on
// a tie the newcomer's own host. A host flooding the listener thus only ever evicts its own
// comms, while a burst from one host with nobody else pending fits up to the cap.
std::map<std::uint64_t, PendingHandshakes::Ticket>::iterator PendingHandshakes::pick_victim(
    const std::string& newcomer_host) {
  std::map<std::string, std::size_t> count{{newcomer_host, 1}};
  for (const auto& [seq, e] : pending_) ++count[e->host];
  auto best = pending_.begin();
  auto rank = [&](const Ticket& e) {
    return std::pair{count[e->host], e->host == newcomer_host};
  };
  for (auto it = pending_.begin(); it != pending_.end(); ++it)
    if (rank(it->second) > rank(best->second)) best = it;  // strictly: the oldest of a tie
  return best;
}

std::string PendingHandshakes::source_host(const std::string& peer_address) {
  try {
    const auto address = Address::parse(peer_address);
    return HostPort::parse(address.location).host;
  } catch (const CommError&) {
    return peer_address;
  }
}

PendingHandshakes::Ticket PendingHandshakes::admit(const CommPtr& comm) {
  return admit(comm->peer_address(), comm->local_address(),
               [weak = std::weak_ptr<Comm>(comm)] {
                 if (auto c = weak.lock()) c->abort();
               });
}

PendingHandshakes::Ticket PendingHandshakes::admit(const std::string& peer_address,
                                                   const std::string& local_address,
                                                   std::function<void()> abort) {
  auto ticket = std::make_shared<Entry>();
  ticket->abort = std::move(abort);
  ticket->peer_address = peer_address;
  ticket->host = source_host(ticket->peer_address);
  std::vector<Ticket> victims;
  std::string listener;
  {
    std::lock_guard lock(mu_);
    if (listener_.empty()) listener_ = "listener at " + local_address;
    listener = listener_;
    while (pending_.size() >= max_pending_) {
      auto victim = pick_victim(ticket->host);
      victims.push_back(victim->second);
      pending_.erase(victim);
    }
    for (const auto& v : victims) {
      v->evicted = true;
      note_eviction(v->host);
    }
    ticket->seq = next_seq_++;
    pending_.emplace(ticket->seq, ticket);
  }
  for (const auto& v : victims) {
    spdlog::debug("{}: dropped the comm from {} still in its handshake, to make room for {} "
                  "(at most {} per listener)",
                  listener, v->peer_address, ticket->peer_address, max_pending_);
    v->abort();
  }
  return ticket;
}

bool PendingHandshakes::finish(const Ticket& ticket) {
  std::lock_guard lock(mu_);
  pending_.erase(ticket->seq);
  return ticket->evicted;
}

// The listener is closing: no comm still in its handshake can be accepted any more. Each is
// aborted rather than left to its handshake timeout, which may never fire once the runtime
// stops, and a comm whose read handler holds its own handshake would then never be freed.
void PendingHandshakes::stop() {
  std::vector<Ticket> in_handshake;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    summary_timer_.cancel();
    for (auto& [seq, entry] : pending_) {
      entry->evicted = true;  // its failure is no news (finish() says so)
      in_handshake.push_back(entry);
    }
    pending_.clear();
  }
  for (auto& t : in_handshake) t->abort();
}

void PendingHandshakes::note_eviction(const std::string& host) {
  ++evicted_total_;
  if (evicted_by_host_.count(host) || evicted_by_host_.size() < kMaxHostsNamed)
    ++evicted_by_host_[host];
  else
    ++evicted_elsewhere_;
  if (summary_armed_ || stopped_) return;
  // The first eviction after a quiet interval is told at once; the next ones in a summary.
  spdlog::warn("{}: dropped a comm from {} still in its handshake: more peers were in "
               "handshake than allowed (at most {} per listener); further drops "
               "are summarised every {} s",
               listener_, host, max_pending_, kSummaryInterval.count());
  summary_armed_ = true;
  restart_summary();
}

void PendingHandshakes::on_summary_timer() {
  std::lock_guard lock(mu_);
  if (stopped_ || evicted_total_ == 0) {
    summary_armed_ = false;
    return;
  }
  std::string where;
  for (const auto& [host, n] : evicted_by_host_)
    where += fmt::format("{}{} ({})", where.empty() ? "" : ", ", host, n);
  if (evicted_elsewhere_) where += fmt::format(", {} from other hosts", evicted_elsewhere_);
  spdlog::warn("{}: dropped {} comm{} still in their handshake in the last {} s, from {}",
               listener_, evicted_total_, evicted_total_ == 1 ? "" : "s",
               kSummaryInterval.count(), where);
  restart_summary();
}

void PendingHandshakes::restart_summary() {
  evicted_by_host_.clear();
  evicted_elsewhere_ = evicted_total_ = 0;
  summary_timer_.expires_after(kSummaryInterval);
  summary_timer_.async_wait([self = shared_from_this()](error_code ec) {
    if (!ec) self->on_summary_timer();
  });
}

}  // namespace taskwire::comm
