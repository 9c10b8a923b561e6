// What a cluster looks like, and how far a computation is: Client::scheduler_info() and
// taskwire::progress(). Runs a scheduler and 3 workers inside this process (see
// mapreduce_cluster.hpp); with a running scheduler, connect a taskwire::Client to it instead.
//
//   ./cluster_status [tasks]
#include "examples/mapreduce_cluster.hpp"

#include <taskwire/client/progress.hpp>
#include <taskwire/runtime/log.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

namespace status {
int nap(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
}  // namespace status
TASKWIRE_REGISTER(status::nap);

int main(int argc, char** argv) {
  const int tasks = argc > 1 ? std::atoi(argv[1]) : 200;
  taskwire::runtime::init_logging({"warn", "", -1});
  mapreduce::InProcessCluster cluster("tcp://127.0.0.1:0", 3);
  auto& client = cluster.client();
  const auto info = client.scheduler_info();
  fmt::print("scheduler at {}, {} client(s)\n", info.address, info.clients);
  for (const auto& w : info.workers)
    fmt::print("  {} ({}) on {}: {} thread(s), {:.1f} MiB\n", w.name, w.address, w.host,
               w.nthreads, static_cast<double>(w.memory) / (1 << 20));
  auto naps = client.map(status::nap, std::vector<int>(static_cast<std::size_t>(tasks), 5));
  // A bar on a terminal; lines every second into a pipe or a file.
  const auto counts = taskwire::progress(naps, {.out = &std::cout, .interval = std::chrono::seconds(1)});
  const bool ok = info.workers.size() == 3 && counts.done == naps.size() && counts.erred == 0;
  fmt::print("{}\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
