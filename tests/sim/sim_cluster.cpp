#include "sim_cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iostream>

#include <unistd.h>

namespace taskwire::sim {

namespace {
/// Per-seed scheduler options: queuing on or off, stealing mostly on, a short death report
/// window, a transition log short enough for long runs, assign ahead mostly on.
scheduler::SchedulerOptions scheduler_options(Rng& rng) {
  scheduler::SchedulerOptions o;
  o.worker_saturation = rng.chance(0.3) ? INFINITY : rng.uniform(1.0, 2.0);
  o.work_stealing = rng.chance(0.9);
  o.allowed_failures = rng.between(2, 4);
  o.death_report_seconds = rng.uniform(0.2, 1.5);
  o.default_task_duration = rng.uniform(0.01, 0.5);
  o.transition_log_length = 2000;
  o.assign_ahead = rng.chance(0.25) ? 0 : rng.between(1, 4);
  o.assign_ahead_across_workers = rng.chance(0.5);
  return o;
}

/// Once this many events pass beyond the budget with work still pending, the run is
/// declared stuck (a livelock: messages that beget messages for ever).
constexpr std::size_t kDrainAllowance = 200'000;
}  // namespace

SimStats& SimStats::operator+=(const SimStats& o) {
  events += o.events;
  scheduler_events += o.scheduler_events;
  worker_events += o.worker_events;
  graphs += o.graphs;
  keys_in_memory += o.keys_in_memory;
  keys_erred += o.keys_erred;
  keys_lost += o.keys_lost;
  executions += o.executions;
  injected_failures += o.injected_failures;
  crashes += o.crashes;
  retirements += o.retirements;
  drains += o.drains;
  drains_closed += o.drains_closed;
  replicas_added += o.replicas_added;
  client_retirements += o.client_retirements;
  client_retirements_answered += o.client_retirements_answered;
  client_retirements_given_up += o.client_retirements_given_up;
  joins += o.joins;
  refusals += o.refusals;
  pauses += o.pauses;
  stalls += o.stalls;
  spill_losses += o.spill_losses;
  rejoins += o.rejoins;
  steal_requests += o.steal_requests;
  steals += o.steals;
  missing_data += o.missing_data;
  gather_failures += o.gather_failures;
  awaited_asked += o.awaited_asked;
  awaited_received += o.awaited_received;
  removed_by_heartbeat += o.removed_by_heartbeat;
  sim_seconds += o.sim_seconds;
  return *this;
}

Cluster::Cluster(const SimConfig& config)
    : config_(config), rng_(mix64(config.seed)), graph_rng_(rng_.fork()), net_(0.002),
      client_(*this) {
  Rng options_rng = rng_.fork();
  scheduler_ = std::make_unique<SimScheduler>(*this, scheduler_options(options_rng),
                                              options_rng.uniform(3.0, 8.0));
  if (config_.spill_losses) {
    static std::atomic<std::uint64_t> clusters{0};
    spill_root_ = std::filesystem::temp_directory_path() /
                  fmt::format("taskwire-sim-{}-{}", ::getpid(), clusters++);
    std::filesystem::create_directories(spill_root_);
  }
}

Cluster::~Cluster() {
  workers_.clear();
  graveyard_.clear();
  std::error_code ignored;
  if (!spill_root_.empty()) std::filesystem::remove_all(spill_root_, ignored);
}

double Cluster::latency() {
  return rng_.chance(0.05) ? rng_.uniform(0.01, 0.3) : rng_.uniform(0.0005, 0.005);
}

void Cluster::trace(const std::string& line) {
  std::string stamped = fmt::format("[{:9.4f} #{}] {}", net_.now(), stats_.events, line);
  if (config_.trace_all) std::cerr << stamped << '\n';
  trace_.push_back(std::move(stamped));
  while (trace_.size() > config_.trace_tail) trace_.pop_front();
}

void Cluster::fail(const std::string& what) {
  throw SimFailure(fmt::format("seed {}: event {} at t={:.4f}: {}", config_.seed, stats_.events,
                               net_.now(), what));
}

SimWorker* Cluster::live_worker(const std::string& address) {
  auto it = workers_.find(address);
  return it == workers_.end() ? nullptr : it->second.get();
}

std::size_t Cluster::injected_failures(const std::string& key) const {
  auto it = injected_.find(key);
  return it == injected_.end() ? 0 : it->second;
}

SimResult Cluster::run() {
  SimResult result;
  try {
    scheduler_->start();
    const int initial = rng_.between(1, std::min(4, config_.max_workers));
    for (int i = 0; i < initial; ++i) add_worker("");
    net_.post("cluster", LocalSubmit{}, rng_.uniform(0, 0.05));
    if (config_.faults) net_.post("cluster", LocalFaultTimer{}, config_.fault_interval, true);
    for (;;) {
      graveyard_.clear();
      if (!net_.busy() && scheduler_->state().awaiting_death_reports() == 0) {
        if (phase_ == Phase::releasing) break;
        // Quiet: nothing in flight, nothing running. Every wanted key must be settled.
        trace("quiescent: checking, then releasing everything");
        client_.check_settled();
        check_quiet_machines();
        client_.release_all();
        phase_ = Phase::releasing;
        continue;
      }
      if (stats_.events > config_.max_events + kDrainAllowance)
        fail(fmt::format("no quiescence {} events past the budget: {} items pending",
                         kDrainAllowance, net_.pending()));
      auto e = net_.next(rng_);
      if (!e) fail("nothing pending, yet the network says it is busy");
      ++stats_.events;
      if (stats_.events == config_.dump_at) dump_state();
      dispatch(*e);
    }
    check_empty();
  } catch (const SimFailure& f) {
    result.ok = false;
    result.failure = f.what();
    for (const auto& line : trace_) result.trace += line + '\n';
  }
  stats_.sim_seconds = net_.now();
  result.stats = stats_;
  return result;
}

void Cluster::dispatch(const Envelope& e) {
  const bool heartbeat = e.ops.size() == 1 && std::holds_alternative<OpHeartbeat>(e.ops[0]);
  if (!e.timer && !heartbeat) {  // timers and heartbeats would drown the rest
    std::string ops;
    for (const Payload& p : e.ops) ops += (ops.empty() ? "" : "; ") + describe(p);
    trace(e.local ? fmt::format("{}: {}", e.to, ops) : fmt::format("{} -> {}: {}", e.from, e.to, ops));
  }
  if (e.to == "scheduler") return scheduler_->receive(e);
  if (e.to == "client") return client_.receive(e);
  if (e.to == "cluster") {
    for (const Payload& p : e.ops) to_cluster(p);
    return;
  }
  if (SimWorker* w = live_worker(e.to)) return w->receive(e);
  // Its process is gone: a peer's get_data finds no one there (the connect fails).
  for (const Payload& p : e.ops)
    if (std::holds_alternative<OpGetData>(p)) net_.send(e.to, e.from, {OpPeerLost{}}, latency());
}

void Cluster::to_cluster(const Payload& p) {
  if (const auto* join = std::get_if<LocalJoin>(&p)) {
    --pending_joins_;
    add_worker(join->name);
  } else if (std::holds_alternative<LocalSubmit>(p)) {
    submit_next();
  } else if (std::holds_alternative<LocalFaultTimer>(p)) {
    if (phase_ == Phase::running && stats_.events < config_.max_events) fault();
    // Exponential gaps: faults come in bursts and lulls.
    net_.post("cluster", LocalFaultTimer{}, -std::log(1 - rng_.unit()) * config_.fault_interval,
              true);
  }
}

void Cluster::submit_next() {
  const bool more = config_.graphs > 0 ? next_graph_ < config_.graphs
                                       : stats_.events < config_.max_events;
  if (!more || phase_ != Phase::running) return;
  if (client_.unfinished_graphs() >= 4) {  // a long run keeps a few graphs going at once
    net_.post("cluster", LocalSubmit{}, rng_.uniform(0.05, 0.5));
    return;
  }
  GraphOptions options;
  client_.submit(make_graph(next_graph_++, graph_rng_, options));
  net_.post("cluster", LocalSubmit{}, rng_.uniform(0, 1.0));
}

SimWorker& Cluster::add_worker(std::string name) {
  const std::string address = fmt::format("sim://w{}", ++next_worker_);
  if (name.empty() && !dead_names_.empty() && rng_.chance(0.3)) {
    name = dead_names_[rng_.below(dead_names_.size())];  // a name free once its loss is handled
  }
  if (name_in_use(name)) name.clear();  // refused for as long as that worker lives
  if (name.empty()) name = fmt::format("worker-{}", next_worker_);
  worker::WorkerStateOptions o;
  o.address = address;
  o.name = name;
  o.nthreads = static_cast<unsigned>(rng_.between(1, 4));
  o.max_gather_peers = static_cast<std::size_t>(rng_.between(1, 4));
  o.max_keys_per_gather = rng_.chance(0.3) ? 1 : 1000;
  o.function_known = [](const std::string&) { return true; };
  const bool nanny = rng_.chance(0.5);
  // Spilling only when the injector asks (target 0): the directory is where its files go.
  const std::filesystem::path spill =
      spill_root_.empty() ? std::filesystem::path() : spill_root_ / fmt::format("w{}", next_worker_);
  if (!spill.empty()) std::filesystem::create_directories(spill);
  std::shared_ptr<worker::DataStore> kept;
  if (auto k = kept_.find(name); k != kept_.end()) {
    kept = std::move(k->second);
    kept_.erase(k);
  }
  auto owned = std::make_unique<SimWorker>(*this, std::move(o), nanny, spill, std::move(kept));
  SimWorker& w = *owned;
  workers_.emplace(address, std::move(owned));
  ++stats_.joins;
  trace(fmt::format("worker {} ({}, {} threads{}) starts", address, name, w.state().options().nthreads,
                    nanny ? ", nanny" : ""));
  w.start();
  return w;
}

bool Cluster::name_in_use(const std::string& name) const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [&](const auto& kv) { return kv.second->name() == name; });
}

void Cluster::schedule_join(std::string name, double delay) {
  ++pending_joins_;
  net_.post("cluster", LocalJoin{std::move(name)}, delay);
}

void Cluster::worker_exits(SimWorker& w, bool crashed, bool expected, const std::string& reason) {
  const std::string address = w.address();
  trace(fmt::format("worker {} exits: {}", address, reason));
  net_.cut_from(address, crashed ? &rng_ : nullptr);
  net_.send(address, "scheduler", {OpConnectionClosed{expected, reason}}, latency());
  if (crashed && w.nanny()) {
    // The nanny reports the death on its own connection, unless it went down too.
    if (rng_.chance(0.85))
      net_.send("nanny:" + address, "scheduler",
                {OpWorkerDied{address, w.name(), "SIGKILL (simulated)", w.running()}}, latency());
    schedule_join(w.name(), rng_.uniform(0.01, 0.5));  // and restarts it under its name
  }
  // Peers awaiting a reply from it see their comm fail (after what it did send them).
  for (const auto& [other, peer] : workers_)
    if (other != address && peer->awaits(address)) net_.send(address, other, {OpPeerLost{}}, latency());
  dead_.insert(address);
  dead_names_.push_back(w.name());
  graveyard_.push_back(std::move(workers_.at(address)));
  workers_.erase(address);
  if (workers_.empty() && pending_joins_ == 0) schedule_join("", rng_.uniform(0.01, 1.0));
}

void Cluster::rejoin_keeping_data(SimWorker& w) {
  if (!config_.rejoin_with_data) return;
  ++stats_.rejoins;
  kept_[w.name()] = w.data_store();
  schedule_join(w.name(), rng_.uniform(0.05, 1.0));
}

void Cluster::refused(SimWorker& w) {
  ++stats_.refusals;
  const std::string name = w.name();
  worker_exits(w, false, false, "refused by the scheduler");
  schedule_join(name, rng_.uniform(0.1, 1.0));  // its nanny (or operator) tries again
}

}  // namespace taskwire::sim
