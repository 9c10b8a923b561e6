#include <taskwire/scheduler/instruction_sender.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace taskwire::scheduler {

using protocol::Op;

InstructionSender::InstructionSender(PeerLinks& peers, TaskSpecStore& specs,
                                     const SchedulerState& state)
    : peers_(peers), specs_(specs), state_(state) {}

void InstructionSender::send(Instructions instructions) {
  for (auto& i : instructions) std::visit([this](auto& x) { emit(x); }, i);
}

void InstructionSender::emit(ComputeTask& ct) {
  specs_.write_compute_task(ct, state_, peers_.out_to(peers_.worker(ct.worker)));
}

void InstructionSender::emit(FreeKeys& f) {
  if (auto* out = peers_.out_to(peers_.worker(f.worker)))
    out->add(f.processing ? Op::free_processing : Op::free_keys, protocol::Keys{f.keys});
}

void InstructionSender::emit(StealRequest& s) {
  if (auto* out = peers_.out_to(peers_.worker(s.worker)))
    out->add(Op::steal_request, protocol::StealRequest{s.key, s.attempt});
}

void InstructionSender::emit(RefuseWorker& r) {
  // The state machine logged why, with both addresses.
  const auto peer = peers_.worker(r.worker);
  if (!peer) return;
  peers_.out_to(peer)->add(Op::worker_refused, protocol::WorkerRefused{r.reason});
  peers_.remove_worker(r.worker);
  peer->refused = true;
}

void InstructionSender::emit(CloseWorker& c) {
  if (c.rejoin) {
    spdlog::warn("scheduler: closing worker {}: {}", c.worker, c.reason);
  } else {
    spdlog::info("scheduler: closing worker {}: {}", c.worker, c.reason);
  }
  if (auto* out = peers_.out_to(peers_.worker(c.worker)))
    out->add(Op::close_worker, protocol::CloseWorker{c.reason, c.rejoin});
}

void InstructionSender::emit(AcquireReplicas& a) {
  protocol::AcquireReplicas body;
  for (auto& k : a.keys) body.who_has.emplace(std::move(k.key), std::move(k.who_has));
  if (auto* out = peers_.out_to(peers_.worker(a.worker))) out->add(Op::acquire_replicas, body);
}

void InstructionSender::emit(ReportKeyInMemory& r) {
  const auto out_peer = peers_.client(r.client);
  auto* out = peers_.out_to(out_peer);
  if (!out) return;
  std::vector<runtime::Frame> payload;
  if (inline_result_ && inline_result_->first == r.key) payload.push_back(inline_result_->second);
  out->add(Op::key_in_memory,
           protocol::KeyInMemory{r.key, static_cast<std::uint64_t>(std::max<std::int64_t>(r.nbytes, 0)),
                                 peers_.holders_for(*out_peer, state_.who_has(r.key))},
           std::move(payload));
}

void InstructionSender::emit(ReportTaskErred& r) {
  if (auto* out = peers_.out_to(peers_.client(r.client)))
    out->add(Op::key_erred, protocol::KeyErred{r.key, r.message, r.blamed_key, r.cause,
                                               r.exception_type, r.worker_name,
                                               r.worker_address});
}

void InstructionSender::emit(ReportKeyLost& r) {
  spdlog::info("scheduler: key {} lost, recomputing", r.key);
  if (auto* out = peers_.out_to(peers_.client(r.client))) out->add(Op::key_lost, protocol::Keys{{r.key}});
}

void InstructionSender::emit(ReportCancelled& r) {
  if (auto* out = peers_.out_to(peers_.client(r.client)))
    out->add(Op::key_cancelled, protocol::KeysCancelled{r.keys, r.reason});
}

void InstructionSender::emit(ReportRetirement& r) {
  protocol::RetireWorkersReply reply{r.request_id, std::move(r.retired), {}};
  for (auto& f : r.failed) reply.failed.push_back({std::move(f.worker), std::move(f.reason)});
  if (auto* out = peers_.out_to(peers_.client(r.client))) out->add(Op::retire_workers_reply, reply);
}

void InstructionSender::emit(ReportRebalance& r) {
  if (auto* out = peers_.out_to(peers_.client(r.client)))
    out->add(Op::rebalance_reply,
             protocol::RebalanceReply{
                 r.request_id, r.moved,
                 static_cast<std::uint64_t>(std::max<std::int64_t>(r.moved_bytes, 0)),
                 std::move(r.failed)});
}

void InstructionSender::emit(DropTaskSpec& d) {
  specs_.drop(d.spec, d.key);
}

void InstructionSender::emit(LogEvent& l) {
  switch (l.level) {
    case LogLevel::debug: spdlog::debug("scheduler: {}", l.message); break;
    case LogLevel::info: spdlog::info("scheduler: {}", l.message); break;
    case LogLevel::warning: spdlog::warn("scheduler: {}", l.message); break;
    case LogLevel::error: spdlog::error("scheduler: {}", l.message); break;
  }
}

}  // namespace taskwire::scheduler
