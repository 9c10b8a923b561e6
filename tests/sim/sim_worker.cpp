#include "sim_worker.hpp"

#include "sim_cluster.hpp"
#include "sim_graphs.hpp"

#include <fmt/format.h>

namespace taskwire::sim {

namespace {

constexpr double kHeartbeatInterval = 0.5;
}  // namespace

SimWorker::SimWorker(Cluster& cluster, worker::WorkerStateOptions options, bool nanny,
                     const std::filesystem::path& spill_directory,
                     std::shared_ptr<worker::DataStore> kept)
    : cluster_(cluster),
      state_(std::move(options),
             kept ? std::move(kept)
                  : std::make_shared<worker::DataStore>(worker::SpillOptions{spill_directory, 0})),
      nanny_(nanny) {}

void SimWorker::start() {
  // As on_started(): register, then a first heartbeat, in one batch.
  to_scheduler(OpRegister{name(), static_cast<int>(state_.options().nthreads), nanny_,
                          state_.data().keys()});
  to_scheduler(OpHeartbeat{});
  flush();
  cluster_.net().post(address(), LocalHeartbeatTimer{}, kHeartbeatInterval, true);
}

void SimWorker::receive(const Envelope& e) {
  if (e.local) {
    for (const Payload& op : e.ops) {
      if (const auto* x = std::get_if<LocalExecuted>(&op)) {
        std::visit([this](const auto& r) {
          if constexpr (requires { r.key; }) running_.erase(r.key);
        }, x->result);
        handle({x->result});
      } else if (std::holds_alternative<LocalHeartbeatTimer>(op)) {
        to_scheduler(OpHeartbeat{});
        flush();
        cluster_.net().post(address(), LocalHeartbeatTimer{}, kHeartbeatInterval, true);
      } else if (std::holds_alternative<LocalUnpause>(op)) {
        set_paused(false);
      } else if (std::holds_alternative<LocalRetireGrace>(op)) {
        // As on_lifetime_over(): a clean close; what it held alone is computed again.
        return cluster_.worker_exits(*this, false, true, "its retirement's grace is over");
      }
    }
    return;
  }
  if (e.from == "scheduler") return from_scheduler(e);
  from_peer(e);
}

void SimWorker::from_scheduler(const Envelope& e) {
  std::vector<worker::Event> events;
  bool close = false, rejoin = true;
  bool refused = false;
  for (const Payload& op : e.ops) {
    std::visit(Overloaded{
                   [&](const OpComputeTask& x) { events.emplace_back(x.event); },
                   [&](const OpFreeKeys& x) {
                     busy_asked_ = busy_asked_ || x.processing;
                     events.emplace_back(worker::FreeKeysEvent{x.keys, ""});
                   },
                   [&](const OpStealRequest& x) {
                     events.emplace_back(worker::StealRequestEvent{x.key, "", x.attempt});
                   },
                   [&](const OpAcquireReplicas& x) {
                     events.emplace_back(worker::AcquireReplicasEvent{x.who_has, ""});
                   },
                   [&](const OpCloseWorker& x) {
                     close = true;
                     rejoin = x.rejoin;
                   },
                   [&](const OpWorkerRefused&) { refused = true; },
                   [&](const auto& x) {
                     cluster_.fail(fmt::format("worker {} got {} from the scheduler", address(),
                                               describe(Payload(x))));
                   },
               },
               op);
  }
  // As on_scheduler_message(): a refusal closes at once; otherwise the batch's events are
  // handled, then a requested close follows.
  if (refused) return cluster_.refused(*this);
  if (!events.empty()) handle(std::move(events));
  if (close) {
    cluster_.worker_exits(*this, false, true,
                          rejoin ? "the scheduler asked this worker to close" : "retired");
    if (rejoin) cluster_.rejoin_keeping_data(*this);  // as taskwire-worker after close_worker(rejoin)
  }
}

void SimWorker::from_peer(const Envelope& e) {
  for (const Payload& op : e.ops) {
    if (const auto* get = std::get_if<OpGetData>(&op)) {
      serve(e.from, *get);
    } else if (const auto* reply = std::get_if<OpDataReply>(&op)) {
      auto it = outstanding_.find(e.from);
      if (it == outstanding_.end() || !it->second.erase(reply->id)) continue;  // failed before
      worker::GatherDepDone done;
      done.worker = e.from;
      done.wait = waits_.erase(reply->id) > 0;
      if (done.wait && !reply->data.empty()) ++cluster_.stats().awaited_received;
      done.data = reply->data;
      done.missing = reply->missing;
      done.sent_at = done.arrived_at = cluster_.net().now();
      handle({std::move(done)});
    } else if (std::holds_alternative<OpPeerLost>(op)) {
      peer_lost(e.from);
    } else {
      cluster_.fail(fmt::format("worker {} got {} from {}", address(), describe(op), e.from));
    }
  }
}

// get_data is answered from the data store, off the state machine (data_server.cpp).
void SimWorker::serve(const std::string& peer, const OpGetData& get) {
  if (get.wait && get.keys.size() == 1 && !state_.data().contains(get.keys.front()) &&
      state_.computes(get.keys.front())) {
    parked_.emplace_back(peer, get);
    return;
  }
  const auto lookup = state_.data().get_many(get.keys);
  cluster_.net().send(address(), peer, {OpDataReply{get.id, lookup.found, lookup.missing}},
                      cluster_.latency());
}

// As DataServer::answer_parked(): after the state machine ran.
void SimWorker::answer_parked() {
  std::erase_if(parked_, [this](const auto& p) {
    if (state_.computes(p.second.keys.front())) return false;
    OpGetData now = p.second;
    now.wait = false;
    serve(p.first, now);
    return true;
  });
}

// As fail_link(): the comm to the peer failed; the state machine hears of it only if
// something was asked of that peer.
void SimWorker::peer_lost(const std::string& peer) {
  auto it = outstanding_.find(peer);
  if (it == outstanding_.end() || it->second.empty()) return;
  for (const auto id : it->second) waits_.erase(id);
  outstanding_.erase(it);
  ++cluster_.stats().gather_failures;
  handle({worker::GatherDepFailed{peer, "the peer's process is gone", ""}});
}

std::size_t SimWorker::lose_spill_files(int spill) {
  const auto& directory = state_.data().spill_options().directory;
  if (directory.empty()) return 0;
  int spilled = 0;
  while (spilled < spill && state_.data().spill_oldest() > 0) ++spilled;
  std::size_t files = 0;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ignored)) {
    std::filesystem::remove(entry.path(), ignored);
    ++files;
  }
  return files;
}

void SimWorker::set_paused(bool paused) {
  if (paused == state_.paused()) return;
  state_.set_paused(paused);
  to_scheduler(OpWorkerStatus{paused});
  if (paused) return flush();
  handle({});  // start what waited; flushes the status with whatever that starts
}

void SimWorker::handle(std::vector<worker::Event> events) {
  ++cluster_.stats().worker_events;
  worker::Instructions instructions = state_.handle(std::move(events));
  try {
    state_.validate();
  } catch (const std::exception& x) {
    cluster_.fail(fmt::format("worker {}: {}", address(), x.what()));
  }
  run(instructions);
  answer_parked();
  // As the server: threads held by cancelled tasks are reported when they change, and
  // whenever free_processing asked.
  const std::size_t busy = state_.cancelled_on_threads();
  if (busy != reported_busy_ || busy_asked_) {
    reported_busy_ = busy;
    busy_asked_ = false;
    to_scheduler(OpThreadsBusy{static_cast<int>(busy)});
  }
  flush();
}

void SimWorker::run(worker::Instructions& instructions) {
  for (auto& instruction : instructions) {
    std::visit(
        Overloaded{
            [this](worker::Execute& x) { execute(x); },
            [this](worker::GatherDep& g) { gather(g); },
            [this](worker::SendTaskFinished& x) {
              to_scheduler(OpTaskFinished{x.key, x.nbytes, x.duration_s, state_.data().get(x.key),
                                          x.attempt});
            },
            [this](worker::SendTaskErred& x) {
              to_scheduler(OpTaskErred{x.key, x.message, x.exception_type, x.attempt});
            },
            [this](worker::SendMissingData& x) {
              ++cluster_.stats().missing_data;
              to_scheduler(OpMissingData{x.key, x.missing, x.from, x.awaited});
            },
            [this](worker::SendStealResponse& x) {
              to_scheduler(OpStealResponse{x.key, x.stolen, x.attempt});
            },
            [this](worker::SendAddKeys& x) {
              cluster_.stats().replicas_added += x.keys.size();
              to_scheduler(OpAddKeys{x.keys});
            },
        },
        instruction);
  }
}

// The simulated function: reads its seed argument and its inputs, and either fails (an
// injected failure, or a task that always fails) or returns task_value() of them.
void SimWorker::execute(const worker::Execute& x) {
  ++cluster_.stats().executions;
  const double duration = cluster_.rng().uniform(0.001, 0.2);
  worker::Event result;
  const SeedArg seed = x.args.empty() ? SeedArg{} : read_seed(x.args[0].bytes());
  if (seed.always_fails || cluster_.rng().chance(cluster_.config().task_fail_rate)) {
    ++cluster_.stats().injected_failures;
    cluster_.note_injected_failure(x.key);
    result = worker::ExecuteFailure{x.key, fmt::format("injected failure of '{}'", x.key),
                                    duration, "sim::InjectedFailure", ""};
  } else {
    std::vector<std::uint64_t> inputs;
    for (std::size_t i = 1; i < x.args.size(); ++i) inputs.push_back(read_value(x.args[i].bytes()));
    result = worker::ExecuteSuccess{x.key, value_frame(task_value(seed.seed, inputs)), duration,
                                    ""};
  }
  running_.insert(x.key);
  cluster_.net().post(address(), LocalExecuted{std::move(result)}, duration);
}

void SimWorker::gather(const worker::GatherDep& g) {
  const std::uint64_t id = ++next_request_;
  outstanding_[g.worker].insert(id);
  if (g.wait) {
    waits_.insert(id);
    ++cluster_.stats().awaited_asked;
  }
  cluster_.net().send(address(), g.worker, {OpGetData{id, g.keys, g.wait}}, cluster_.latency());
}

void SimWorker::retire() {
  to_scheduler(OpRetireWorker{});
  flush();
  cluster_.net().post(address(), LocalRetireGrace{}, 3.0);
}

void SimWorker::to_scheduler(Payload op) { outbox_.push_back(std::move(op)); }

void SimWorker::flush() {
  if (outbox_.empty()) return;
  cluster_.net().send(address(), "scheduler", std::exchange(outbox_, {}), cluster_.latency());
}

}  // namespace taskwire::sim
