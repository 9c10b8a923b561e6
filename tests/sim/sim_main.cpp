// The simulation test's main: Catch2's, unless a long run is asked for on the command line.
//
//   test_sim [catch options]              the bounded seeds ctest runs
//   test_sim --seeds N [--first-seed S] [--events M] [--graphs G] [--no-faults] [--trace]
//            [--no-spill-losses] [--graceful-retirements]
//            [--fail-rate P] [--max-workers W]
//                                         N seeds from S (default 1), each submitting graphs
//                                         until M events (default 20000; --graphs G stops after
//                                         G graphs instead), then draining; prints each failure
//                                         with its trace, and totals
//   test_sim --seed S --trace             one seed, every trace line on stderr
//
// docs/simulation.md describes what is simulated and checked.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "sim_cluster.hpp"

#include <taskwire/runtime/log.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct LongRun {
  bool asked = false;
  std::uint64_t first_seed = 1;
  std::uint64_t seeds = 1;
  taskwire::sim::SimConfig config;
};

/// Takes the long-run options out of argv (the rest goes to Catch); false on a bad option.
bool parse(int& argc, char* argv[], LongRun& run) {
  run.config.graphs = 0;  // a long run submits until the event budget by default
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--seeds" && (v = value())) {
      run.seeds = std::strtoull(v, nullptr, 10);
    } else if (a == "--seed" && (v = value())) {
      run.first_seed = std::strtoull(v, nullptr, 10);
      run.seeds = 1;
    } else if (a == "--first-seed" && (v = value())) {
      run.first_seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--events" && (v = value())) {
      run.config.max_events = std::strtoull(v, nullptr, 10);
    } else if (a == "--graphs" && (v = value())) {
      run.config.graphs = std::atoi(v);
    } else if (a == "--fail-rate" && (v = value())) {
      run.config.task_fail_rate = std::atof(v);
    } else if (a == "--max-workers" && (v = value())) {
      run.config.max_workers = std::atoi(v);
    } else if (a == "--dump-at" && (v = value())) {
      run.config.dump_at = std::strtoull(v, nullptr, 10);
    } else if (a == "--no-faults") {
      run.config.faults = false;
    } else if (a == "--no-spill-losses") {
      run.config.spill_losses = false;
    } else if (a == "--graceful-retirements") {
      run.config.graceful_retirements = true;
    } else if (a == "--trace") {
      run.config.trace_all = true;
    } else if (a.rfind("--", 0) == 0 &&
               (a == "--seeds" || a == "--seed" || a == "--first-seed" || a == "--events" ||
                a == "--graphs" || a == "--fail-rate" || a == "--max-workers" ||
                a == "--dump-at")) {
      std::cerr << a << " needs a value\n";
      return false;
    } else {
      argv[kept++] = argv[i];
      continue;
    }
    run.asked = true;
  }
  argc = kept;
  return true;
}

void print_stats(const taskwire::sim::SimStats& s) {
  std::cout << "events " << s.events << " (scheduler " << s.scheduler_events << ", workers "
            << s.worker_events << "), simulated " << s.sim_seconds << " s\n"
            << "graphs " << s.graphs << ", keys in memory " << s.keys_in_memory << ", erred "
            << s.keys_erred << ", lost " << s.keys_lost << "\n"
            << "executions " << s.executions << ", injected failures " << s.injected_failures
            << ", missing-data " << s.missing_data << ", failed fetches " << s.gather_failures
            << ", awaited inputs asked " << s.awaited_asked << " (received " << s.awaited_received
            << ")\n"
            << "crashes " << s.crashes << ", retirements " << s.retirements << ", joins "
            << s.joins << ", refusals " << s.refusals << ", heartbeat removals "
            << s.removed_by_heartbeat << ", pauses " << s.pauses << ", stalls " << s.stalls
            << ", spill files lost " << s.spill_losses << ", rejoins with data " << s.rejoins
            << "\n"
            << "steal requests " << s.steal_requests << ", steals " << s.steals << "\n"
            << "graceful retirements " << s.drains << " (" << s.drains_closed
            << " closed by the scheduler), copies made " << s.replicas_added << "\n"
            << "retirements a client asked for " << s.client_retirements << " (answered "
            << s.client_retirements_answered << ", workers not retired "
            << s.client_retirements_given_up << ")\n";
}

int long_run(const LongRun& run) {
  taskwire::sim::SimStats total;
  std::uint64_t failed = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t seed = run.first_seed; seed < run.first_seed + run.seeds; ++seed) {
    auto config = run.config;
    config.seed = seed;
    const auto result = taskwire::sim::run_simulation(config);
    total += result.stats;
    if (result.ok) continue;
    ++failed;
    std::cout << "FAILED " << result.failure << "\n--- last trace lines ---\n"
              << result.trace << "---\n";
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  print_stats(total);
  std::cout << run.seeds << " seed(s) from " << run.first_seed << ", " << failed << " failed, in "
            << seconds << " s\n";
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  const char* level = std::getenv("TASKWIRE_LOG_LEVEL");
  // Off by default: the injected faults make the real code log errors by design (a lost
  // spill file, a closed comm), thousands in a long run.
  taskwire::runtime::init_logging({level ? level : "off", "", -1});
  LongRun run;
  if (!parse(argc, argv, run)) return 2;
  if (run.asked) return long_run(run);
  return Catch::Session().run(argc, argv);
}
