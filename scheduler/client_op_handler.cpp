#include <taskwire/scheduler/client_op_handler.hpp>

#include <taskwire/comm/core/address.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace taskwire::scheduler {

using protocol::Op;

ClientOpHandler::ClientOpHandler(ServerCore& core,
                                 const std::vector<std::unique_ptr<comm::Listener>>& listeners,
                                 ShutdownRequest on_shutdown)
    : core_(core), listeners_(listeners), on_shutdown_(std::move(on_shutdown)) {}

bool ClientOpHandler::handle(const PeerPtr& p, runtime::OpReader& r) {
  switch (r.op()) {
    case Op::update_graph: {
      core_.peers.become_client(p);
      auto g = r.body<protocol::UpdateGraph>();
      on_update_graph(p, std::move(g), r.frames());
      return true;
    }
    case Op::release_keys:
      core_.peers.become_client(p);
      core_.handle(ClientReleasesKeys{p->id, r.body<protocol::Keys>().keys, ""});
      return true;
    case Op::cancel_keys: {
      core_.peers.become_client(p);
      auto b = r.body<protocol::CancelKeys>();
      core_.handle(CancelKeys{p->id, std::move(b.keys), b.force, ""});
      return true;
    }
    case Op::shutdown:
      r.body<protocol::Empty>();
      core_.peers.become_client(p);
      on_shutdown_(p);
      return true;
    case Op::scheduler_info: {
      auto b = r.body<protocol::SchedulerInfoRequest>();
      core_.peers.become_client(p);
      core_.peers.out_to(p)->add(Op::scheduler_info_reply, describe_cluster(*p, b.request_id));
      return true;
    }
    case Op::retire_workers: {
      auto b = r.body<protocol::RetireWorkersRequest>();
      core_.peers.become_client(p);
      core_.handle(RetireWorkers{p->id, b.request_id, std::move(b.workers),
                                 static_cast<std::size_t>(b.count), ""});
      return true;
    }
    case Op::rebalance: {
      auto b = r.body<protocol::RebalanceRequest>();
      core_.peers.become_client(p);
      core_.handle(Rebalance{p->id, b.request_id, std::move(b.keys), std::move(b.workers), ""});
      return true;
    }
    default:
      return false;
  }
}

protocol::SchedulerInfo ClientOpHandler::describe_cluster(const Peer& asking,
                                                          std::uint64_t request_id) const {
  protocol::SchedulerInfo info;
  info.request_id = request_id;
  const auto scheme = comm::Address::parse(asking.comm->local_address()).scheme;
  for (const auto& l : listeners_) {
    info.addresses.push_back(l->contact_address());
    if (info.address.empty() && comm::Address::parse(info.addresses.back()).scheme == scheme)
      info.address = info.addresses.back();
  }
  info.clients = core_.peers.client_count();
  for (const auto& [status, count] : core_.state.tasks_by_state())
    info.tasks_by_state[std::string(to_string(status))] = count;
  const double t = core_.now();
  for (const auto& w : core_.state.workers()) {
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
    if (const auto peer = core_.peers.worker(w.address)) {
      report.other_addresses = peer->other_addresses;
      report.host = peer->host;
      report.memory_rss = peer->metrics.memory_rss;
      report.executing = peer->metrics.executing;
    }
    info.workers.push_back(std::move(report));
  }
  for (auto& u : core_.state.unrunnable(protocol::SchedulerInfo::kMaxUnrunnableReported))
    info.unrunnable.push_back({std::move(u.key), std::move(u.needs)});
  return info;
}

void ClientOpHandler::on_update_graph(const PeerPtr& p, protocol::UpdateGraph g,
                                      std::span<const runtime::Frame> frames) {
  UpdateGraph ev;
  ev.client = p->id;
  ev.wanted = std::move(g.wanted);
  for (auto& k : g.scattered)
    ev.scattered.push_back(
        {std::move(k.key), static_cast<std::int64_t>(k.nbytes), std::move(k.workers)});
  ev.tasks.reserve(g.tasks.size());
  for (auto& t : g.tasks) {
    const SpecRef ref = core_.specs.keep(t, frames);
    ev.tasks.push_back(TaskSpec{std::move(t.key), std::move(t.function),
                                std::move(t.dependencies), t.priority,
                                static_cast<int>(t.retries), ref, t.user_priority,
                                std::move(t.resources), std::move(t.workers),
                                t.allow_other_workers});
  }
  core_.handle(std::move(ev));
}

}  // namespace taskwire::scheduler
