#include "sim_client.hpp"

#include "sim_cluster.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace taskwire::sim {

void SimClient::submit(Graph g) {
  OpUpdateGraph op;
  for (std::size_t i = 0; i < g.tasks.size(); ++i) {
    const GraphTask& t = g.tasks[i];
    op.tasks.push_back(ClientTask{t.key, t.deps, static_cast<std::int64_t>(i), t.retries,
                                  seed_frame(t)});
  }
  op.wanted = g.wanted;
  GraphRun run;
  for (const auto& k : g.wanted) {
    run.wanted[k] = {};
    owner_[k] = runs_.size();
  }
  cluster_.trace(fmt::format("client submits {} ({} tasks, wants {})", g.name, g.tasks.size(),
                             g.wanted));
  run.graph = std::move(g);
  runs_.push_back(std::move(run));
  ++cluster_.stats().graphs;
  cluster_.net().send("client", "scheduler", {std::move(op)}, cluster_.latency());
}

SimClient::GraphRun* SimClient::owner(const std::string& key) {
  auto it = owner_.find(key);
  return it == owner_.end() ? nullptr : &runs_[it->second];
}

void SimClient::receive(const Envelope& e) {
  for (const Payload& op : e.ops) {
    if (const auto* m = std::get_if<OpKeyInMemory>(&op)) {
      on_in_memory(*m);
    } else if (const auto* x = std::get_if<OpKeyErred>(&op)) {
      on_erred(*x);
    } else if (const auto* l = std::get_if<OpKeyLost>(&op)) {
      ++cluster_.stats().keys_lost;
      if (GraphRun* run = owner(l->key); run && !run->released)
        run->wanted[l->key] = {};  // recomputed: a new report follows
    } else if (const auto* r = std::get_if<LocalFetchRetry>(&op)) {
      retry_fetch(*r);
    } else if (const auto* c = std::get_if<OpKeyCancelled>(&op)) {
      cluster_.fail(fmt::format("the scheduler cancelled {} ({}), which the client never "
                                "cancelled",
                                c->keys, c->reason));
    } else {
      cluster_.fail(fmt::format("the client got {}", describe(op)));
    }
  }
}

void SimClient::on_in_memory(const OpKeyInMemory& m) {
  GraphRun* run = owner(m.key);
  if (!run) cluster_.fail(fmt::format("key-in-memory for '{}', never wanted", m.key));
  if (run->released) return;  // reported before the release reached the scheduler
  KeyStatus& status = run->wanted[m.key];
  if (status.outcome == Outcome::erred)
    cluster_.fail(fmt::format("'{}' reported in memory after it erred ({})", m.key, status.cause));
  if (m.value) {
    check_value(*run, m.key, read_value(*m.value), "the inline result");
  } else if (cluster_.config().spill_losses && cluster_.rng().chance(0.5) && !fetch(*run, m.key)) {
    status = {};  // news follows (the key lost, then in memory again), or the retry fetches
    cluster_.net().post("client", LocalFetchRetry{m.key, 1}, cluster_.rng().uniform(0.2, 1.0));
    return;
  }
  status = {Outcome::memory, "", ""};
  ++cluster_.stats().keys_in_memory;
  maybe_release(*run);
}

bool SimClient::fetch(GraphRun& run, const std::string& key) {
  std::vector<Payload> missing;
  for (const std::string& holder : cluster_.scheduler().state().who_has(key)) {
    SimWorker* w = cluster_.live_worker(holder);
    if (auto frame = w ? w->state().data().get(key) : std::nullopt) {
      check_value(run, key, read_value(*frame), "the data of " + holder);
      return true;
    }
    missing.push_back(OpMissingData{"", key, holder});
  }
  cluster_.trace(fmt::format("client: no holder could send '{}'", key));
  if (!missing.empty()) cluster_.net().send("client", "scheduler", std::move(missing), cluster_.latency());
  return false;
}

// As await_news() then another round of results(): without news the client asks again;
// the real one gives up after kFetchAttempts (a TaskError the user sees: here a failure).
void SimClient::retry_fetch(const LocalFetchRetry& r) {
  GraphRun* run = owner(r.key);
  if (!run || run->released || run->wanted[r.key].outcome != Outcome::pending) return;
  if (cluster_.scheduler().state().task_state(r.key) != scheduler::TaskStatus::memory) return;
  if (fetch(*run, r.key)) {
    run->wanted[r.key] = {Outcome::memory, "", ""};
    ++cluster_.stats().keys_in_memory;
    return maybe_release(*run);
  }
  if (r.attempt >= 5)
    cluster_.fail(fmt::format("the client could not fetch '{}' in {} rounds: the scheduler "
                              "keeps it in memory on holders that do not have it",
                              r.key, r.attempt));
  cluster_.net().post("client", LocalFetchRetry{r.key, r.attempt + 1},
                      cluster_.rng().uniform(0.2, 1.0));
}

void SimClient::on_erred(const OpKeyErred& m) {
  GraphRun* run = owner(m.key);
  if (!run) cluster_.fail(fmt::format("key-erred for '{}', never wanted", m.key));
  if (run->released) return;
  check_error(*run, m.key, m);
  run->wanted[m.key] = {Outcome::erred, m.blamed_key, m.cause};
  ++cluster_.stats().keys_erred;
  maybe_release(*run);
}

void SimClient::check_value(const GraphRun& run, const std::string& key, std::uint64_t value,
                            const std::string& where) {
  const std::uint64_t expected = run.graph.expected.at(key);
  if (value != expected)
    cluster_.fail(fmt::format("WRONG VALUE for '{}' in {}: {:#x}, expected {:#x}", key, where,
                              value, expected));
}

void SimClient::check_error(const GraphRun& run, const std::string& key, const OpKeyErred& m) {
  const auto& upstream = run.graph.ancestors.at(key);
  auto is_upstream = [&](const std::string& k) {
    return std::find(upstream.begin(), upstream.end(), k) != upstream.end();
  };
  if (!is_upstream(m.blamed_key))
    cluster_.fail(fmt::format("'{}' erred blaming '{}', not upstream of it: {}", key, m.blamed_key,
                              m.cause));
  if (m.cause.find("killed") != std::string::npos) return;  // allowed_failures worker deaths
  // The root failure's text names the task that failed (possibly through a worker's
  // "dependency 'X' failed: ..." for a local dependent).
  const std::string marker = "injected failure of '";
  const auto at = m.cause.find(marker);
  if (at == std::string::npos)
    cluster_.fail(fmt::format("'{}' erred for a reason the simulation did not cause: {}", key,
                              m.cause));
  const auto begin = at + marker.size();
  const std::string failed = m.cause.substr(begin, m.cause.find('\'', begin) - begin);
  if (!is_upstream(failed) || cluster_.injected_failures(failed) == 0)
    cluster_.fail(fmt::format("'{}' erred blaming a failure of '{}', which never failed: {}", key,
                              failed, m.cause));
  // Retries: a task errs only after failing once more than it may be retried.
  for (const GraphTask& t : run.graph.tasks) {
    if (t.key == failed && cluster_.injected_failures(failed) < static_cast<std::size_t>(t.retries) + 1)
      cluster_.fail(fmt::format("'{}' erred after {} failure(s) of '{}', which had {} retries", key,
                                cluster_.injected_failures(failed), failed, t.retries));
  }
}

bool SimClient::finished(const GraphRun& run) const {
  return std::all_of(run.wanted.begin(), run.wanted.end(),
                     [](const auto& kv) { return kv.second.outcome != Outcome::pending; });
}

// A finished graph is released now and then during the run (the rest at its end), so that
// releases race with the work of other graphs and long runs hold bounded state.
void SimClient::maybe_release(GraphRun& run) {
  if (finished(run) && cluster_.rng().chance(0.5)) release(run);
}

void SimClient::release(GraphRun& run) {
  if (run.released) return;
  run.released = true;
  std::vector<std::string> keys;
  for (const auto& [k, status] : run.wanted) keys.push_back(k);
  cluster_.trace(fmt::format("client releases {}", run.graph.name));
  cluster_.net().send("client", "scheduler", {OpReleaseKeys{std::move(keys)}}, cluster_.latency());
}

std::size_t SimClient::open_graphs() const {
  return static_cast<std::size_t>(
      std::count_if(runs_.begin(), runs_.end(), [](const GraphRun& r) { return !r.released; }));
}

std::size_t SimClient::unfinished_graphs() const {
  return static_cast<std::size_t>(std::count_if(
      runs_.begin(), runs_.end(), [this](const GraphRun& r) { return !r.released && !finished(r); }));
}

void SimClient::check_settled() {
  const auto& state = cluster_.scheduler().state();
  for (const GraphRun& run : runs_) {
    if (run.released) continue;
    for (const auto& [key, status] : run.wanted) {
      const auto s = state.task_state(key);
      const std::string where = s ? std::string(scheduler::to_string(*s)) : "unknown";
      if (status.outcome == Outcome::pending)
        cluster_.fail(fmt::format("HANG: '{}' of {} never settled (the scheduler has it {}, "
                                  "processing on {})",
                                  key, run.graph.name, where,
                                  state.processing_on(key).value_or("nobody")));
      if (status.outcome == Outcome::erred) continue;
      if (s != scheduler::TaskStatus::memory)
        cluster_.fail(fmt::format("'{}' was reported in memory but the scheduler has it {}", key,
                                  where));
      for (const std::string& holder : state.who_has(key)) {
        SimWorker* w = cluster_.live_worker(holder);
        if (!w) cluster_.fail(fmt::format("'{}' held by {}, which is gone", key, holder));
        // A value whose spill file went is found lost only when read (a fetch then reports it
        // missing and the scheduler recomputes it): lost is allowed, wrong or absent is not.
        auto frame = w->state().data().get(key);
        if (!frame && w->state().data().lost(key)) continue;
        if (!frame)
          cluster_.fail(fmt::format("'{}' held by {} per the scheduler, not there", key, holder));
        check_value(run, key, read_value(*frame), "the data of " + holder);
      }
    }
  }
}

std::vector<std::string> SimClient::all_keys() const {
  std::vector<std::string> keys;
  for (const GraphRun& run : runs_)
    for (const GraphTask& t : run.graph.tasks) keys.push_back(t.key);
  return keys;
}

void SimClient::release_all() {
  for (GraphRun& run : runs_) release(run);
}

}  // namespace taskwire::sim
