#include <taskwire/scheduler/peer_links.hpp>

#include <taskwire/comm/core/address.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace taskwire::scheduler {

using protocol::Op;

void PeerLinks::become_client(const PeerPtr& p) {
  if (p->kind == Peer::worker) throw std::runtime_error("a worker sent a client operation");
  if (p->kind == Peer::client) return;
  p->kind = Peer::client;
  p->id = fmt::format("client-{}-{}", ++next_client_, p->comm->peer().name);
  clients_[p->id] = p;
  spdlog::info("scheduler: client {} connected from {}", p->id, p->comm->peer_address());
}

void PeerLinks::add_nanny(const PeerPtr& p) {
  std::erase_if(nannies_, [](const auto& n) { return n.expired(); });
  nannies_.push_back(p);
}

runtime::BatchWriter* PeerLinks::out_to(const PeerPtr& p) {
  if (!p) return nullptr;
  if (p->out.empty()) touched_.push_back(p);
  return &p->out;
}

void PeerLinks::flush() {
  for (auto& p : touched_)
    if (!p->out.empty())
      p->comm->async_write(p->out.take(), [](error_code ec) {
        if (ec) spdlog::debug("scheduler: write failed: {}", ec.message());
      });
  touched_.clear();
}

void PeerLinks::tell_workers_to_close(const std::string& reason) {
  for (auto& [addr, w] : workers_)
    out_to(w)->add(Op::close_worker, protocol::CloseWorker{reason, false});
}

void PeerLinks::tell_nannies_to_close(const std::string& reason) {
  for (const auto& n : nannies_)
    if (auto p = n.lock()) out_to(p)->add(Op::close_worker, protocol::CloseWorker{reason, false});
}

void PeerLinks::close_all() {
  for (auto& [id, c] : clients_) c->comm->close();
  for (auto& [id, w] : workers_) w->comm->close();
  for (const auto& n : nannies_)
    if (auto p = n.lock()) p->comm->close();
}

void PeerLinks::abort_all() {
  for (auto& [id, c] : clients_) c->comm->abort();
  for (auto& [id, w] : workers_) w->comm->abort();
}

std::vector<std::string> PeerLinks::holders_for(const Peer& client,
                                                std::vector<std::string> holders) const {
  const auto scheme = comm::Address::parse(client.comm->local_address()).scheme;
  std::vector<std::string> preferred;
  for (const auto& h : holders)
    if (const auto w = worker(h))
      for (const auto& a : w->other_addresses)
        if (comm::Address::parse(a).scheme == scheme) preferred.push_back(a);
  if (preferred.empty()) return holders;
  preferred.insert(preferred.end(), holders.begin(), holders.end());
  return preferred;
}

}  // namespace taskwire::scheduler
