// A client in its own process for big_map_test.sh: one client.map over N inputs (a million
// by default: far more than the 65 536 frames one message may hold), every result checked,
// then the scheduler's peak resident memory (VmHWM of its /proc status) per task.
//   big_map_client FILE SCHEDULER_PID N MAX_BYTES_PER_TASK   (0: report, do not judge)
// Prints "CHECKED <what>" / "FAILED <what>"; exits 0 only if every check passed.
#include "tests/cluster/cluster_functions.hpp"
#include "tests/launch/checks.hpp"

#include <taskwire/client/client.hpp>

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <numeric>
#include <string>

using namespace taskwire;
using launch_checks::check;

namespace {

// Peak resident set of process `pid` in bytes (VmHWM), or 0 if it cannot be read.
std::uint64_t peak_resident_bytes(const std::string& pid) {
  std::ifstream status("/proc/" + pid + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // in kB
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    fmt::print(stderr, "usage: big_map_client FILE SCHEDULER_PID N MAX_BYTES_PER_TASK\n");
    return 2;
  }
  const std::string pid = argv[2];
  const int n = std::stoi(argv[3]);
  const std::uint64_t max_per_task = std::stoull(argv[4]);
  try {
    ClientOptions options;
    options.connect_timeout = std::chrono::seconds(30);
    options.fetch_timeout = std::chrono::seconds(30);
    auto client = Client::from_scheduler_file(argv[1], options);
    const std::uint64_t idle = peak_resident_bytes(pid);
    std::vector<int> xs(static_cast<std::size_t>(n));
    std::iota(xs.begin(), xs.end(), 0);
    const auto t0 = std::chrono::steady_clock::now();
    long total = 0;
    {
      auto futures = client.map(cluster_fns::inc, xs);
      check(futures.size() == xs.size(), fmt::format("map over {} inputs: one future each", n));
      auto ys = client.gather(futures);
      bool all_right = ys.size() == xs.size();
      for (std::size_t i = 0; all_right && i < ys.size(); ++i) all_right = ys[i] == xs[i] + 1;
      check(all_right, fmt::format("map over {} inputs: every result right", n));
      total = std::accumulate(ys.begin(), ys.end(), 0L);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::uint64_t peak = peak_resident_bytes(pid);
    const double per_task = static_cast<double>(peak) / n;
    fmt::print("scheduler peak resident: {:.1f} MiB ({:.1f} MiB idle), {:.0f} B per task; "
               "{} tasks in {:.1f} s; sum {}\n",
               peak / 1048576.0, idle / 1048576.0, per_task, n, seconds, total);
    check(peak > 0, "read the scheduler's VmHWM");
    // The futures' release (a million keys to forget) goes ahead of this task: once it is
    // done the scheduler is idle again and acknowledges the shutdown promptly (a slow, e.g.
    // sanitized, build took longer than shutdown()'s 10 s to forget them).
    check(client.submit(cluster_fns::inc, 1).get() == 2, "a task after the map's release");
    if (max_per_task > 0)
      check(per_task <= static_cast<double>(max_per_task),
            fmt::format("scheduler peak <= {} B per task", max_per_task));
    client.shutdown();
  } catch (const std::exception& e) {
    check(false, std::string("no exception: ") + e.what());
  }
  return launch_checks::failures == 0 ? 0 : 1;
}
