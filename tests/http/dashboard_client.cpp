// A client process for the dashboard tests (dashboard_test.sh), finding the scheduler through
// its scheduler file.
//   dashboard_client graph FILE      a map of short tasks, blobs that move between workers,
//                                    and one task that fails; checks the results
//   dashboard_client slow FILE N     N tasks of 50 ms each (the page watches them run)
//   dashboard_client demo FILE       slow tasks with `graph` run meanwhile, three times (for
//                                    the guide's screenshot)
//   dashboard_client hold FILE N     N tasks submitted to a scheduler without workers; waits
//                                    until FILE.go exists (the caller scrapes meanwhile)
//   dashboard_client shutdown FILE   shuts the cluster down
// Prints "CHECKED <what>" / "FAILED <what>"; exits 0 only if every check passed.
#include "tests/cluster/cluster_functions.hpp"
#include "tests/launch/checks.hpp"

#include <taskwire/client/client.hpp>

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <numeric>
#include <thread>

using namespace taskwire;
using launch_checks::check;
using launch_checks::failures;

namespace {

void graph(Client& client) {
  std::vector<int> xs(2000);
  std::iota(xs.begin(), xs.end(), 0);
  auto ys = client.gather(client.map(cluster_fns::inc, xs));
  check(std::accumulate(ys.begin(), ys.end(), 0L) == 2000L * 2001 / 2, "map of 2000 tasks");
  // Pairs of 64 KiB blobs joined: with two workers, some joins fetch a blob from the other.
  std::vector<Future<std::string>> joined;
  for (int i = 0; i < 20; ++i)
    joined.push_back(client.submit(cluster_fns::concat, client.submit(cluster_fns::blob, 64, i),
                                   client.submit(cluster_fns::blob, 64, i + 1)));
  std::size_t bytes = 0;
  for (auto& j : joined) bytes += j.get().size();
  check(bytes == 20u * 128 * 1024, "joined blobs");
  bool threw = false;
  try {
    client.submit(cluster_fns::fail_on, 13).get();
  } catch (const std::exception&) {
    threw = true;
  }
  check(threw, "fail_on(13) failed");
}

void slow(Client& client, int n) {
  std::vector<int> xs(static_cast<std::size_t>(n));
  std::iota(xs.begin(), xs.end(), 0);
  auto ys = client.gather(client.map(cluster_fns::slow_inc, xs));
  check(std::accumulate(ys.begin(), ys.end(), 0L) == static_cast<long>(n) * (n + 1) / 2,
        fmt::format("{} slow tasks", n));
}

void demo(Client& client) {
  std::vector<int> xs(120);
  std::iota(xs.begin(), xs.end(), 0);
  for (int round = 0; round < 3; ++round) {
    auto slow = client.map(cluster_fns::slow_inc, xs);
    graph(client);
    client.gather(slow);
  }
}

void hold(Client& client, const std::string& file, int n) {
  std::vector<int> xs(static_cast<std::size_t>(n));
  std::iota(xs.begin(), xs.end(), 0);
  auto futures = client.map(cluster_fns::inc, xs);
  fmt::print("SUBMITTED {}\n", n);
  std::fflush(stdout);
  for (int i = 0; i < 1200 && !std::ifstream(file + ".go"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: dashboard_client graph|slow|demo|hold|shutdown SCHEDULER_FILE [N]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int n = argc > 3 ? std::atoi(argv[3]) : 0;
  try {
    auto client = Client::from_scheduler_file(argv[2]);
    if (mode == "graph") graph(client);
    else if (mode == "slow") slow(client, n);
    else if (mode == "demo") demo(client);
    else if (mode == "hold") hold(client, argv[2], n);
    else if (mode == "shutdown") client.shutdown();
    else return 2;
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "dashboard_client: {}\n", e.what());
    return 1;
  }
}
