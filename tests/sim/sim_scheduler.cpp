#include "sim_scheduler.hpp"

#include "sim_cluster.hpp"

#include <fmt/format.h>

namespace taskwire::sim {

namespace sch = taskwire::scheduler;

namespace {
constexpr double kCheckInterval = 0.5;

/// Errors the scheduler logs for what the simulation does on purpose; any other error log
/// means its state machine found itself somewhere it should not be.
bool expected_error(const std::string& message) {
  return message.find("killed") != std::string::npos ||
         message.find("no worker was connected") != std::string::npos;
}
}  // namespace

SimScheduler::SimScheduler(Cluster& cluster, sch::SchedulerOptions options,
                           double heartbeat_timeout)
    : cluster_(cluster), state_(std::move(options)), heartbeat_timeout_(heartbeat_timeout) {}

void SimScheduler::start() {
  cluster_.net().post("scheduler", LocalHeartbeatTimer{}, kCheckInterval, true);
}

void SimScheduler::receive(const Envelope& e) {
  for (const Payload& op : e.ops) on_op(e.from, op);
  flush();
}

void SimScheduler::on_op(const std::string& from, const Payload& op) {
  if (on_worker_op(from, op)) return;
  const double now = cluster_.net().now();
  if (const auto* g = std::get_if<OpUpdateGraph>(&op)) return on_update_graph(*g);
  if (const auto* r = std::get_if<OpReleaseKeys>(&op))
    return handle(sch::ClientReleasesKeys{"client", r->keys, ""});
  if (const auto* r = std::get_if<OpRetireWorkers>(&op))
    return handle(sch::RetireWorkers{"client", ++cluster_.stats().client_retirements, r->workers,
                                     0, ""});
  if (std::holds_alternative<LocalHeartbeatTimer>(op)) {
    handle(sch::CheckHeartbeats{now, heartbeat_timeout_, ""});
    cluster_.net().post("scheduler", LocalHeartbeatTimer{}, kCheckInterval, true);
    return;
  }
  cluster_.fail(fmt::format("the scheduler got {} from {}", describe(op), from));
}

bool SimScheduler::on_worker_op(const std::string& from, const Payload& op) {
  const double now = cluster_.net().now();
  if (const auto* r = std::get_if<OpRegister>(&op)) {
    connected_.insert(from);
    handle(sch::AddWorker{from, r->nthreads, r->name, now, "", r->nanny, {}, r->held});
  } else if (std::holds_alternative<OpHeartbeat>(op)) {
    handle(sch::Heartbeat{from, now, ""});
  } else if (const auto* f = std::get_if<OpTaskFinished>(&op)) {
    if (f->result) inline_result_.emplace(f->key, *f->result);
    handle(sch::TaskFinished{from, f->key, static_cast<std::int64_t>(f->nbytes), f->duration, "",
                             f->attempt});
    inline_result_.reset();
  } else if (const auto* x = std::get_if<OpTaskErred>(&op)) {
    handle(sch::TaskErred{from, x->key, x->message, x->exception_type, "", x->attempt});
  } else if (const auto* m = std::get_if<OpMissingData>(&op)) {
    handle(sch::MissingData{from, m->missing, m->from, m->key, "", m->awaited});
  } else if (const auto* b = std::get_if<OpThreadsBusy>(&op)) {
    handle(sch::ThreadsBusy{from, b->count, ""});
  } else if (const auto* s = std::get_if<OpStealResponse>(&op)) {
    if (s->stolen) ++cluster_.stats().steals;
    handle(sch::StealResponse{from, s->key, s->stolen, "", s->attempt});
  } else if (std::holds_alternative<OpRetireWorker>(op)) {
    handle(sch::RetireWorker{from, "its lifetime is over", ""});
  } else if (const auto* k = std::get_if<OpAddKeys>(&op)) {
    handle(sch::AddKeys{from, k->keys, ""});
  } else if (const auto* st = std::get_if<OpWorkerStatus>(&op)) {
    handle(sch::WorkerStatusChanged{from, st->paused, ""});
  } else if (const auto* c = std::get_if<OpConnectionClosed>(&op)) {
    // As peer_gone(): only a connection the server still holds becomes RemoveWorker.
    if (connected_.erase(from)) handle(sch::RemoveWorker{from, c->reason, c->expected, "", now});
  } else if (const auto* d = std::get_if<OpWorkerDied>(&op)) {
    handle(sch::WorkerDied{d->address, d->name, d->cause, d->running, now, ""});
  } else {
    return false;
  }
  return true;
}

// As on_update_graph(): the payload (here the seed frame) stays with the server, the state
// machine gets a SpecRef.
void SimScheduler::on_update_graph(const OpUpdateGraph& g) {
  sch::UpdateGraph ev;
  ev.client = "client";
  ev.wanted = g.wanted;
  for (const ClientTask& t : g.tasks) {
    StoredSpec stored;
    stored.args.push_back({protocol::ArgSpec::frame, 0, ""});
    for (const auto& d : t.dependencies) stored.args.push_back({protocol::ArgSpec::dependency, 0, d});
    stored.dependencies = t.dependencies;
    stored.retries = t.retries;
    stored.frames.push_back(t.seed);
    const sch::SpecRef ref = ++next_spec_;
    specs_.emplace(ref, std::move(stored));
    sch::TaskSpec spec;
    spec.key = t.key;
    spec.function = "sim";
    spec.dependencies = t.dependencies;
    spec.priority = t.priority;
    spec.retries = t.retries;
    spec.spec = ref;
    ev.tasks.push_back(std::move(spec));
  }
  handle(std::move(ev));
}

void SimScheduler::handle(sch::Event event) {
  ++cluster_.stats().scheduler_events;
  const sch::Instructions instructions = state_.handle(event);
  const std::string problem = state_.validate();
  // Emitted first even so: the log lines it brings explain the failure in the trace.
  for (const auto& i : instructions) {
    if (!problem.empty() && !std::holds_alternative<sch::LogEvent>(i)) continue;
    emit(i);
  }
  if (!problem.empty()) cluster_.fail("scheduler: " + problem + story_of_first_key(problem));
}

// The transitions of the first key a validate() message quotes, to diagnose it.
std::string SimScheduler::story_of_first_key(const std::string& problem) const {
  const auto open = problem.find('\'');
  const auto close = open == std::string::npos ? open : problem.find('\'', open + 1);
  if (close == std::string::npos) return "";
  const std::string key = problem.substr(open + 1, close - open - 1);
  std::string story = fmt::format("\n--- story of '{}' ---", key);
  for (const auto& t : state_.story(key))
    story += fmt::format("\n  {} -> {} [{}]", t.start, t.finish, t.stimulus_id);
  return story;
}

void SimScheduler::emit(const sch::Instruction& i) {
  std::visit(
      [this](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, sch::ComputeTask>) {
          emit_compute(x);
        } else if constexpr (std::is_same_v<T, sch::FreeKeys>) {
          to_peer(x.worker, OpFreeKeys{x.keys, x.processing});
        } else if constexpr (std::is_same_v<T, sch::StealRequest>) {
          ++cluster_.stats().steal_requests;
          to_peer(x.worker, OpStealRequest{x.key, x.attempt});
        } else if constexpr (std::is_same_v<T, sch::RefuseWorker>) {
          to_peer(x.worker, OpWorkerRefused{x.reason});
          connected_.erase(x.worker);  // after the refusal is queued: the server closes it
        } else if constexpr (std::is_same_v<T, sch::CloseWorker>) {
          ++(x.rejoin ? cluster_.stats().removed_by_heartbeat : cluster_.stats().drains_closed);
          to_peer(x.worker, OpCloseWorker{x.rejoin});
        } else if constexpr (std::is_same_v<T, sch::AcquireReplicas>) {
          OpAcquireReplicas op;
          for (const auto& k : x.keys) op.who_has[k.key] = k.who_has;
          to_peer(x.worker, std::move(op));
        } else if constexpr (std::is_same_v<T, sch::ReportKeyInMemory>) {
          std::optional<Frame> value;
          if (inline_result_ && inline_result_->first == x.key) value = inline_result_->second;
          out_["client"].push_back(OpKeyInMemory{x.key, value});
        } else if constexpr (std::is_same_v<T, sch::ReportTaskErred>) {
          out_["client"].push_back(OpKeyErred{x.key, x.blamed_key, x.message, x.cause});
        } else if constexpr (std::is_same_v<T, sch::ReportKeyLost>) {
          out_["client"].push_back(OpKeyLost{x.key});
        } else if constexpr (std::is_same_v<T, sch::ReportCancelled>) {
          out_["client"].push_back(OpKeyCancelled{x.keys, x.reason});
        } else if constexpr (std::is_same_v<T, sch::ReportRetirement>) {
          ++cluster_.stats().client_retirements_answered;
          cluster_.stats().client_retirements_given_up += x.failed.size();
        } else if constexpr (std::is_same_v<T, sch::DropTaskSpec>) {
          specs_.erase(x.spec);
        } else if constexpr (std::is_same_v<T, sch::ReportRebalance>) {
          // the simulated client never asks for a rebalance
        } else {
          emit_log(x);
        }
      },
      i);
}

void SimScheduler::emit_compute(const sch::ComputeTask& ct) {
  auto it = specs_.find(ct.spec);
  if (it == specs_.end())
    cluster_.fail(fmt::format("compute-task '{}' refers to spec {}, already dropped", ct.key,
                              ct.spec));
  const StoredSpec& s = it->second;
  OpComputeTask op;
  worker::ComputeTaskEvent& e = op.event;
  e.spec.key = ct.key;
  e.spec.function = ct.function;
  e.spec.args = s.args;
  e.spec.dependencies = s.dependencies;
  e.spec.priority = ct.priority.order;
  e.spec.retries = static_cast<std::uint32_t>(s.retries);
  e.spec.user_priority = ct.priority.user;
  e.spec.resources = ct.resources;
  for (const auto& d : ct.dependencies) {
    e.who_has[d.key] = d.who_has;
    if (d.running) e.awaited.push_back(d.key);
  }
  e.frames = s.frames;
  e.attempt = ct.attempt;
  to_peer(ct.worker, std::move(op));
}

void SimScheduler::emit_log(const sch::LogEvent& l) {
  if (l.level == sch::LogLevel::debug) return;
  cluster_.trace(fmt::format("  scheduler log {}: {}", l.level, l.message));
  if (l.level == sch::LogLevel::error && !expected_error(l.message))
    cluster_.fail("scheduler logged an error: " + l.message);
}

// As the server's out_to(): nothing goes to a worker whose connection it no longer holds.
void SimScheduler::to_peer(const std::string& peer, Payload op) {
  if (!connected_.count(peer)) return;
  out_[peer].push_back(std::move(op));
}

void SimScheduler::flush() {
  for (auto& [peer, ops] : out_) {
    if (!ops.empty()) cluster_.net().send("scheduler", peer, std::move(ops), cluster_.latency());
  }
  out_.clear();
}

}  // namespace taskwire::sim
