// The fault injector, and the checks at quiescence and at the end of a run.
#include "sim_cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

namespace taskwire::sim {

SimWorker* Cluster::random_worker() {
  if (workers_.empty()) return nullptr;
  auto it = workers_.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(rng_.below(workers_.size())));
  return it->second.get();
}

void Cluster::fault() {
  enum { crash, retire, join, pause, stall, none, lose_spill };
  const auto kind = config_.spill_losses ? rng_.weighted({2, 1, 3, 2, 3, 1, 2})
                                         : rng_.weighted({2, 1, 3, 2, 3, 1});
  switch (kind) {
    case crash:
      return crash_random_worker();
    case retire:
      return retire_random_worker();
    case join:
      if (static_cast<int>(workers_.size() + pending_joins_) < config_.max_workers)
        add_worker("");
      return;
    case pause:
      return pause_random_worker();
    case stall:
      return stall_random_channel();
    case lose_spill:
      return lose_random_spill_files();
    default:
      return;
  }
}

void Cluster::crash_random_worker() {
  SimWorker* w = random_worker();
  if (!w) return;
  ++stats_.crashes;
  worker_exits(*w, true, false, "crashed (simulated SIGKILL)");
}

// A clean close (worker_closing, then the connection closes): its tasks are rescheduled
// without blame and its data is lost.
// A graceful one (SimConfig::graceful_retirements, half of them): the worker asks the
// scheduler to retire it, which copies its only copies elsewhere and then closes it; or, half
// of those, the client asks for it (Client::retire_workers: given up when no other worker
// can take its data).
void Cluster::retire_random_worker() {
  SimWorker* w = random_worker();
  if (!w) return;
  if (config_.graceful_retirements && rng_.chance(0.5)) {
    if (rng_.chance(0.5)) {
      trace(fmt::format("the client asks to retire worker {}", w->address()));
      return net_.send("client", "scheduler", {OpRetireWorkers{{w->address()}}}, latency());
    }
    ++stats_.drains;
    trace(fmt::format("worker {} asks to retire (its lifetime is over)", w->address()));
    return w->retire();
  }
  ++stats_.retirements;
  worker_exits(*w, false, true, "retired");
}

void Cluster::pause_random_worker() {
  SimWorker* w = random_worker();
  if (!w || w->paused()) return;
  ++stats_.pauses;
  trace(fmt::format("worker {} pauses (memory)", w->address()));
  w->set_paused(true);
  net_.post(w->address(), LocalUnpause{}, rng_.uniform(0.05, 3.0));
}

// A worker's disk loses its spill files (deleted by an operator, a full /tmp cleaner): it
// spills a few of its values, then every file in its spill directory goes. Those values, and
// any spilled before whose file it kept, are lost there; the worker finds out when it reads
// one (for a task of its own or a peer) and the scheduler must recompute what no one else
// holds.
void Cluster::lose_random_spill_files() {
  SimWorker* w = random_worker();
  if (!w) return;
  const std::size_t lost = w->lose_spill_files(rng_.between(1, 3));
  stats_.spill_losses += lost;
  trace(fmt::format("worker {} loses its spill files ({} value(s) on disk)", w->address(), lost));
}

// A slow link: everything on one channel waits; now and then longer than the scheduler's
// heartbeat timeout, which then removes a worker that is still alive.
void Cluster::stall_random_channel() {
  auto channels = net_.active_channels();
  if (channels.empty()) return;
  const auto& [from, to] = channels[rng_.below(channels.size())];
  const double length = rng_.chance(0.1) ? rng_.uniform(3.0, 12.0) : rng_.uniform(0.05, 1.5);
  ++stats_.stalls;
  trace(fmt::format("stall {} -> {} for {:.3f} s", from, to, length));
  net_.stall(from, to, net_.now() + length);
}

// Nothing in flight and nothing running: the workers must agree that nothing is left to do.
void Cluster::check_quiet_machines() {
  for (const auto& [address, w] : workers_) {
    const auto& s = w->state();
    if (s.executing_count() || s.ready_count() || s.fetch_count() || !s.in_flight_workers().empty())
      fail(fmt::format("HANG on worker {}: {} executing, {} ready, {} to fetch, {} peers in "
                       "flight, with nothing in flight",
                       address, s.executing_count(), s.ready_count(), s.fetch_count(),
                       s.in_flight_workers().size()));
    if (!scheduler_->connected().count(address))
      fail(fmt::format("worker {} is alive but the scheduler holds no connection to it", address));
  }
  const auto by_state = scheduler_->state().tasks_by_state();
  for (const auto& [status, count] : by_state) {
    if (count == 0) continue;
    if (status != scheduler::TaskStatus::memory && status != scheduler::TaskStatus::erred &&
        status != scheduler::TaskStatus::released)
      fail(fmt::format("HANG: {} task(s) {} on the scheduler with nothing in flight", count,
                       scheduler::to_string(status)));
  }
}

// Everything was released and has drained: nothing may be left anywhere.
void Cluster::check_empty() {
  const auto& state = scheduler_->state();
  if (state.task_count() != 0)
    fail(fmt::format("LEAK: the scheduler still holds {} task(s) after every key was released",
                     state.task_count()));
  if (scheduler_->held_specs() != 0)
    fail(fmt::format("LEAK: the scheduler server still holds {} task payload(s)",
                     scheduler_->held_specs()));
  for (const auto& [address, w] : workers_) {
    auto& s = w->state();
    if (s.task_count() != 0 || s.data().size() != 0)
      fail(fmt::format("LEAK: worker {} still holds {} task record(s), {} result(s) after every "
                       "key was released: {}",
                       address, s.task_count(), s.data().size(), fmt::join(s.data().keys(), ", ")));
  }
}

void Cluster::dump_state() {
  const auto& state = scheduler_->state();
  std::cerr << fmt::format("--- scheduler state before event {} ---\n", stats_.events);
  for (const std::string& key : client_.all_keys()) {
    const auto s = state.task_state(key);
    if (!s) continue;
    std::cerr << fmt::format("{} {} on {} held by {}\n", key, *s,
                             state.processing_on(key).value_or("-"), state.who_has(key));
  }
  for (const auto& w : state.workers())
    std::cerr << fmt::format("worker {}: processing {}, holds {}\n", w.address,
                             state.processing(w.address), state.has_what(w.address));
}

SimResult run_simulation(const SimConfig& config) {
  Cluster cluster(config);
  return cluster.run();
}

}  // namespace taskwire::sim
