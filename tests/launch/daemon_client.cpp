// A client in its own process for the daemon tests (daemons_test.sh): it finds the scheduler
// through a scheduler file, like a user's program outside the cluster.
//   daemon_client compute FILE        checks results, then shuts the cluster down
//   daemon_client sigkill FILE PID    SIGKILLs worker PID mid-graph; results must stay right
//   daemon_client sigstop FILE PID    SIGSTOPs worker PID (the only one) holding a result:
//                                     get() must fail within bounds, not hang; then SIGCONT
//   daemon_client spread FILE GO      a graph whose MiB-sized data moves between workers,
//                                     then prints "GRAPH DONE" and waits (up to 60 s) for
//                                     file GO before the shutdown (the caller inspects the
//                                     connections meanwhile)
// Prints "CHECKED <what>" / "FAILED <what>"; exits 0 only if every check passed.
#include "tests/cluster/cluster_functions.hpp"
#include "tests/launch/checks.hpp"

#include <taskwire/client/client.hpp>

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <numeric>
#include <thread>

using namespace taskwire;

namespace {

using launch_checks::check;
using launch_checks::failures;

void compute(Client& client) {
  std::vector<int> xs(1000);
  std::iota(xs.begin(), xs.end(), 0);
  auto ys = client.gather(client.map(cluster_fns::inc, xs));
  check(std::accumulate(ys.begin(), ys.end(), 0L) == 1000L * 1001 / 2, "map over the daemons");
  auto a = client.submit(cluster_fns::inc, 1);
  auto d = client.submit(cluster_fns::add, client.submit(cluster_fns::add, a, a),
                         client.submit(cluster_fns::add, a, 10));
  check(d.get() == 16, "diamond across worker processes");
  try {
    client.submit(cluster_fns::fail_on, 13).get();
    check(false, "task error reaches get()");
  } catch (const TaskError& e) {
    check(std::string(e.what()).find("bad input 13") != std::string::npos, "task error reaches get()");
  }
}

// Chains of slow tasks spread over the workers; one worker dies while they run.
void survive_sigkill(Client& client, int victim) {
  std::vector<Future<int>> heads;
  for (int c = 0; c < 8; ++c) {
    auto f = client.submit(cluster_fns::slow_inc, c * 100);
    for (int k = 0; k < 9; ++k) f = client.submit(cluster_fns::slow_inc, f);
    heads.push_back(f);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  fmt::print("killing worker pid {} mid-graph\n", victim);
  std::fflush(stdout);
  ::kill(victim, SIGKILL);
  auto out = client.gather(heads);
  bool right = true;
  for (int c = 0; c < 8; ++c) right = right && out[c] == c * 100 + 10;
  check(right, "every chain's result is right after a worker was SIGKILLed");
}

// True once every thread of `pid` is stopped (state T in /proc/PID/stat): a signal takes
// effect asynchronously, and a thread could still answer a request meanwhile.
bool stopped(int pid) {
  for (int i = 0; i < 500; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'T') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A worker that stops answering (SIGSTOP) while it holds a result the client has not
// fetched: the fetch gives up after the client's timeout and get() fails with a message,
// where it used to wait forever. Then the worker goes on and the cluster serves again.
void survive_sigstop(Client& client, int worker) {
  const std::string big(100'000, 'y');  // above the inline limit: fetched from the worker
  auto a = client.submit(cluster_fns::greet, big);
  auto b = client.submit(cluster_fns::greet, big + "!");
  check(a.get() == "hello " + big, "a result fetched from the worker");  // the link is open
  check(b.wait_for(std::chrono::seconds(30)), "a second result in memory on the worker");
  ::kill(worker, SIGSTOP);
  check(stopped(worker), "the worker is stopped");
  const auto t0 = std::chrono::steady_clock::now();
  try {
    b.get();
    check(false, "get() from a stopped worker fails");
  } catch (const std::exception& e) {
    const auto took = std::chrono::steady_clock::now() - t0;
    fmt::print("get() from the stopped worker: {}\n", e.what());
    check(took < std::chrono::seconds(30), "get() from a stopped worker fails within 30 s");
  }
  ::kill(worker, SIGCONT);
  check(client.submit(cluster_fns::inc, 1).get() == 2, "the worker serves again after SIGCONT");
}

// Blobs made on the workers, joined pairwise: a join's inputs are on different workers as
// often as not, so data moves worker to worker; the client fetches the whole.
void spread(Client& client, const std::string& go_file) {
  constexpr int kParts = 8, kKiB = 1024;
  std::vector<Future<std::string>> level;
  for (int i = 0; i < kParts; ++i) level.push_back(client.submit(cluster_fns::blob, kKiB, i));
  while (level.size() > 1) {
    std::vector<Future<std::string>> next;
    for (std::size_t i = 0; i + 1 < level.size(); i += 2)
      next.push_back(client.submit(cluster_fns::concat, level[i], level[i + 1]));
    level = std::move(next);
  }
  std::string expected;
  for (int i = 0; i < kParts; ++i) expected += cluster_fns::blob(kKiB, i);
  check(level[0].get() == expected, fmt::format("{} MiB joined from {} blobs", kParts * kKiB / 1024, kParts));
  fmt::print("GRAPH DONE\n");
  std::fflush(stdout);
  for (int i = 0; i < 600 && !std::ifstream(go_file); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  check(static_cast<bool>(std::ifstream(go_file)), "told to go on");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: daemon_client compute|sigkill|sigstop|spread SCHEDULER_FILE [PID|GO_FILE]\n");
    return 2;
  }
  const std::string mode = argv[1];
  try {
    ClientOptions options;
    if (mode == "sigstop") options.fetch_timeout = std::chrono::seconds(3);
    auto client = Client::from_scheduler_file(argv[2], options);
    if (mode == "sigkill" && argc > 3) survive_sigkill(client, std::atoi(argv[3]));
    if (mode == "sigstop" && argc > 3) survive_sigstop(client, std::atoi(argv[3]));
    if (mode == "spread" && argc > 3) spread(client, argv[3]);
    compute(client);
    client.shutdown();
    fmt::print("client: done, {} failures\n", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "daemon_client: {}\n", e.what());
    return 1;
  }
}
