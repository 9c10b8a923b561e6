// The simulated cluster (sim_cluster.hpp) over a bounded set of seeds. A failing seed is
// replayed, with every trace line, by `test_sim --seed S --trace`.
#include "sim_cluster.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using taskwire::sim::run_simulation;
using taskwire::sim::SimConfig;
using taskwire::sim::SimResult;
using taskwire::sim::SimStats;

/// Seeds of these ranges that fail for a known bug (test_known_bugs.cpp): skipped here, so
/// that the rest still guard everything else. A fix makes them pass: then drop them here.
const std::vector<std::uint64_t> kKnownBugSeeds = {};

/// Runs seeds [first, first + count) but the known-bug ones; every one must pass. Returns
/// the totals.
SimStats run_seeds(SimConfig config, std::uint64_t first, std::uint64_t count) {
  SimStats total;
  for (std::uint64_t seed = first; seed < first + count; ++seed) {
    if (std::find(kKnownBugSeeds.begin(), kKnownBugSeeds.end(), seed) != kKnownBugSeeds.end())
      continue;
    config.seed = seed;
    const SimResult r = run_simulation(config);
    total += r.stats;
    INFO("last trace lines:\n" << r.trace);
    INFO("replay: test_sim --seed " << seed << " --trace"
                                    << (config.faults ? "" : " --no-faults")
                                    << (config.graceful_retirements ? " --graceful-retirements" : "")
                                    << " --graphs " << config.graphs << " --events "
                                    << config.max_events);
    CHECK(r.failure == "");
    if (!r.ok) break;  // one failure's trace is enough to read
  }
  return total;
}

/// No crashes, joins, pauses or stalls: only the network's delays and task failures.
SimConfig without_faults(double task_fail_rate, int graphs) {
  SimConfig config;
  config.faults = false;
  config.task_fail_rate = task_fail_rate;
  config.graphs = graphs;
  return config;
}

}  // namespace

TEST_CASE("sim: without faults every graph computes the right values", "[sim]") {
  const SimStats s = run_seeds(without_faults(0, 6), 1, 200);
  CHECK(s.keys_in_memory > 0);
}

TEST_CASE("sim: task failures and retries, no worker faults", "[sim]") {
  const SimStats s = run_seeds(without_faults(0.15, 5), 1001, 200);
  CHECK(s.injected_failures > 0);
  CHECK(s.keys_erred > 0);
}

TEST_CASE("sim: crashes, joins, pauses, stalls, steals and failures", "[sim]") {
  SimConfig config;
  config.graphs = 5;
  const SimStats s = run_seeds(config, 2001, 800);
  // The seeds must reach what they are meant to exercise.
  CHECK(s.crashes > 0);
  CHECK(s.retirements > 0);
  CHECK(s.joins > 0);
  CHECK(s.refusals > 0);
  CHECK(s.pauses > 0);
  CHECK(s.stalls > 0);
  CHECK(s.spill_losses > 0);
  CHECK(s.rejoins > 0);
  CHECK(s.removed_by_heartbeat > 0);
  CHECK(s.steal_requests > 0);
  CHECK(s.steals > 0);
  CHECK(s.missing_data + s.gather_failures > 0);
  CHECK(s.keys_lost > 0);
  CHECK(s.awaited_received > 0);  // inputs awaited from the worker running them
}

TEST_CASE("sim: a seed replays identically", "[sim]") {
  SimConfig config;
  config.seed = 4242;
  const SimResult a = run_simulation(config);
  const SimResult b = run_simulation(config);
  CHECK(a.trace == b.trace);
  CHECK(a.stats.events == b.stats.events);
  CHECK(a.stats.executions == b.stats.executions);
  CHECK(a.stats.sim_seconds == b.stats.sim_seconds);
}

TEST_CASE("sim: graceful retirements among the faults: copies made, workers closed as retired",
          "[sim][retirement]") {
  SimConfig config;
  config.graphs = 5;
  config.graceful_retirements = true;
  const SimStats s = run_seeds(config, 6001, 300);
  CHECK(s.drains > 0);
  CHECK(s.drains_closed > 0);
  CHECK(s.replicas_added > 0);
  CHECK(s.client_retirements > 0);
  CHECK(s.client_retirements_answered > 0);
  CHECK(s.retirements > 0);  // the other half: clean closes that lose their data
}
