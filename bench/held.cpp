#include "bench/held.hpp"

#include "bench/cluster_ranks.hpp"
#include "bench/local_cluster.hpp"
#include "bench/stats.hpp"

#include <taskwire/client/client.hpp>
#include <taskwire/launch/mpi/launch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <utility>
#include <stdexcept>

namespace taskwire::bench {

std::vector<double> held_vector(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return v;
}
double held_element(const std::vector<double>& v, std::size_t i) { return v.at(i); }
double held_element_copy(std::vector<double> v, std::size_t i) { return v.at(i); }
int held_noop(int x) { return x; }

}  // namespace taskwire::bench

TASKWIRE_REGISTER(taskwire::bench::held_vector);
TASKWIRE_REGISTER(taskwire::bench::held_element);
TASKWIRE_REGISTER(taskwire::bench::held_element_copy);
TASKWIRE_REGISTER(taskwire::bench::held_noop);

namespace taskwire::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kCases[] = {"noop", "read (task result)", "read (scattered)",
                                   "read by value (a copy)"};

struct Runs {
  /// Per case, each measurement's median round trip and its median excess over the no-op
  /// round trip made just before it (pairs cancel most of the machine's drift), seconds.
  std::map<std::string, std::vector<double>> roundtrip, over_noop;
};

// One measurement: `count` rounds of a no-op round trip, then one of each call; a call
// returns the element it read (checked against i).
using Call = std::pair<std::string, std::function<double(std::size_t)>>;
void measure_once(int count, std::size_t n, Client& client, const std::vector<Call>& calls,
                  Runs& runs) {
  std::map<std::string, std::vector<double>> rts, excess;
  for (int k = 0; k < count; ++k) {
    const std::size_t i = (static_cast<std::size_t>(k) * 7919) % n;
    auto t0 = Clock::now();
    client.submit(held_noop, static_cast<int>(k)).get();
    const double noop = seconds_since(t0);
    rts["noop"].push_back(noop);
    for (const auto& [name, call] : calls) {
      t0 = Clock::now();
      const double got = call(i);
      const double rt = seconds_since(t0);
      if (got != static_cast<double>(i))
        throw std::runtime_error(fmt::format("{}: read element {} as {}", name, i, got));
      rts[name].push_back(rt);
      excess[name].push_back(rt - noop);
    }
  }
  for (auto& [name, v] : rts) runs.roundtrip[name].push_back(median(v));
  for (auto& [name, v] : excess) runs.over_noop[name].push_back(median(v));
}

Runs measure(Client& client, const HeldOptions& o) {
  const std::size_t n = std::max<std::size_t>(1, o.bytes / sizeof(double));
  auto made = client.submit(held_vector, n);
  auto scattered = client.scatter(held_vector(n));
  client.submit(held_element, made, std::size_t{0}).get();  // warm up, and the one decode
  client.submit(held_element, scattered, std::size_t{0}).get();
  Runs runs;
  for (int r = 0; r < o.repeats; ++r) {
    measure_once(o.reads, n, client,
                 {{kCases[1],
                   [&](std::size_t i) { return client.submit(held_element, made, i).get(); }},
                  {kCases[2],
                   [&](std::size_t i) { return client.submit(held_element, scattered, i).get(); }}},
                 runs);
    Runs copies;  // its no-op round trips are not the main measurement's
    measure_once(o.copies, n, client,
                 {{kCases[3],
                   [&](std::size_t i) { return client.submit(held_element_copy, made, i).get(); }}},
                 copies);
    runs.roundtrip[kCases[3]].push_back(copies.roundtrip[kCases[3]].back());
    runs.over_noop[kCases[3]].push_back(copies.over_noop[kCases[3]].back());
  }
  return runs;
}

void report(const std::string& backend, const HeldOptions& o, const Runs& runs, CsvWriter& csv) {
  for (const char* name : kCases) {
    const double us = median(runs.roundtrip.at(name)) * 1e6;
    const double over = runs.over_noop.count(name) ? median(runs.over_noop.at(name)) * 1e6 : 0;
    fmt::print("{:<8} {:<24} {:>10} {:>14.1f} {:>14.1f}\n", backend, name, human_bytes(o.bytes), us,
               over);
    csv.row(fmt::format("{},{},{},{:.2f},{:.2f}", backend, name, o.bytes, us, over));
  }
  std::fflush(stdout);
}

void print_header() {
  fmt::print("{:<8} {:<24} {:>10} {:>14} {:>14}\n", "backend", "case", "vector", "us/roundtrip",
             "us over noop");
}

constexpr const char* kCsvHeader = "backend,case,bytes,us_per_roundtrip,us_over_noop";

int run_on_ranks(const HeldOptions& o) {
  for (const auto& b : o.backends) mpi::parse_transport(b);
  mpi::MpiEnvironment env;
  const mpi::Layout layout{0, 1};
  if (!enough_ranks_for_cluster(env, "held", 3, false)) return 2;
  const bool client = env.rank() == layout.client_rank;
  CsvWriter csv(client ? o.csv : "", kCsvHeader);
  if (client) print_header();
  int rc = 0;
  for (const auto& backend : o.backends) {
    mpi::LaunchOptions lo;
    lo.transport = mpi::parse_transport(backend);
    lo.nthreads = 1;
    rc |= mpi::run_cluster(env, lo, layout,
                           [&](Client& c) { report(backend, o, measure(c, o), csv); });
  }
  return rc;
}

}  // namespace

int run_held(const HeldOptions& o) {
  const bool mpi_wanted =
      std::find(o.backends.begin(), o.backends.end(), "mpi") != o.backends.end();
  if (mpi_wanted || launched_on_several_ranks()) return run_on_ranks(o);
  CsvWriter csv(o.csv, kCsvHeader);
  print_header();
  for (const auto& backend : o.backends) {
    LocalCluster cluster(backend, 1);
    Client client(cluster.make_registry("client"), cluster.address);
    report(backend, o, measure(client, o), csv);
  }
  return 0;
}

}  // namespace taskwire::bench
