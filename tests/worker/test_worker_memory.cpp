// Worker memory limits: parsing them, the pause in the state machine, and a cluster of worker
// daemons whose intermediate data is twice their memory limits completing with spilling,
// each worker's peak RSS under its limit.
#include "tests/worker/daemon_process.hpp"
#include "tests/worker/memory_functions.hpp"
#include "tests/worker/worker_state_harness.hpp"

#include <taskwire/client/client.hpp>
#include <taskwire/comm/backends.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>
#include <taskwire/worker/memory_limits.hpp>

#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace taskwire;
using namespace taskwire::worker;
using namespace taskwire::worker::testing;

TEST_CASE("memory limit: bytes with units, fractions of the machine, auto and none",
          "[worker][memory]") {
  CHECK(parse_memory_limit("4e9", 1) == 4'000'000'000u);
  CHECK(parse_memory_limit("4GB", 1) == 4'000'000'000u);
  CHECK(parse_memory_limit("4 GiB", 1) == (std::uint64_t{4} << 30));
  CHECK(parse_memory_limit("96MiB", 1) == (std::uint64_t{96} << 20));
  CHECK(parse_memory_limit("1500kb", 1) == 1'500'000u);
  CHECK(parse_memory_limit("none", 1) == 0);
  CHECK(parse_memory_limit("0", 1) == 0);
  const auto machine = system_memory_bytes();
  REQUIRE(machine > 0);
  CHECK(parse_memory_limit("0.5", 1) == machine / 2);
  CHECK(parse_memory_limit("1", 1) == machine);
  CHECK(parse_memory_limit("auto", 1) > 0);
  CHECK(parse_memory_limit("auto", 1) <= machine);
  CHECK(parse_memory_limit("AUTO", 100000) == machine);  // more threads than cores: all of it
  CHECK_THROWS_WITH(parse_memory_limit("4 parsecs", 1, "--memory-limit"),
                    Catch::Contains("--memory-limit '4 parsecs': unknown unit"));
  CHECK_THROWS_AS(parse_memory_limit("lots", 1), std::invalid_argument);
  CHECK_THROWS_AS(parse_memory_limit("-1GB", 1), std::invalid_argument);
}

TEST_CASE("memory fractions: each off or at most 1, and in order", "[worker][memory]") {
  MemoryOptions m;
  CHECK_NOTHROW(check_memory_fractions(m));
  m.spill = 0;  // off: skipped in the order check
  CHECK_NOTHROW(check_memory_fractions(m));
  m.pause = 0.5;  // below target
  CHECK_THROWS_WITH(check_memory_fractions(m), Catch::Contains("pause fraction 0.5 is below"));
  m = MemoryOptions{};
  m.terminate = 1.5;
  CHECK_THROWS_WITH(check_memory_fractions(m), Catch::Contains("terminate fraction 1.5"));
}

TEST_CASE("worker state: paused, it starts no task until unpaused", "[worker][memory]") {
  WorkerState ws(options(1));
  ws.set_paused(true);
  CHECK(executed(step(ws, compute("a"))).empty());
  CHECK(ws.status("a") == TaskStatus::ready);
  ws.set_paused(false);
  CHECK(executed(step_all(ws, {})) == std::vector<std::string>{"a"});
  ws.set_paused(true);  // a running task finishes; the next waits
  step(ws, compute("b"));
  auto out = step(ws, success("a"));
  CHECK(executed(out).empty());
  CHECK(ws.status("a") == TaskStatus::memory);
  CHECK(ws.status("b") == TaskStatus::ready);
}

namespace {

// A target below Dask's 0.6: this small a worker's own memory (threads, libraries, the
// allocator's pages) is a large part of its limit (docs/scheduling.md, "Memory").
constexpr std::uint64_t kWorkerLimit = std::uint64_t{128} << 20;
constexpr int kWorkers = 2;
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAddressSanitizer = true;  // RSS then counts the sanitizer's memory too
#else
constexpr bool kUnderAddressSanitizer = false;
#endif
// Intermediate data twice the workers' limits together, held at once.
constexpr std::size_t kBlobs = 2 * kWorkers * kWorkerLimit / ((test::kMemoryBlobWords + 1) * 8);

std::uint64_t status_field_bytes(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  return 0;
}

std::size_t files_under(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) ++n;
  return n;
}

}  // namespace

TEST_CASE("worker daemons: intermediate data twice their memory limits spills, completes "
          "correctly, and no worker's peak RSS passes its limit",
          "[worker][memory][daemon]") {
  char dir_pattern[] = "/tmp/taskwire-memory-test-XXXXXX";
  REQUIRE(::mkdtemp(dir_pattern));
  const std::filesystem::path local_dir = dir_pattern;
  struct RemoveDir {
    std::filesystem::path p;
    ~RemoveDir() { std::filesystem::remove_all(p); }
  } remove_dir{local_dir};

  runtime::Context ctx(runtime::Config::from_env(), 2);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  scheduler::SchedulerServerOptions so;
  so.listen = {"tcp://127.0.0.1:0"};
  scheduler::SchedulerServer scheduler(registry, so);
  scheduler.start();
  const auto address = scheduler.addresses().at(0);
  std::vector<std::unique_ptr<Daemon>> workers;
  for (int i = 0; i < kWorkers; ++i) {
    std::vector<std::string> args{
        address, "--no-nanny", "--nthreads", "1", "--name", "m" + std::to_string(i),
        "--preload", TASKWIRE_MEMORY_PRELOAD_LIB, "--memory-limit", "128MiB",
        "--local-directory", local_dir.string(), "--memory-target-fraction", "0.3",
        "--no-dashboard", "--log-level", "info"};
    if (kUnderAddressSanitizer) {
      // Under AddressSanitizer an idle worker's RSS is already past 128 MiB (its shadow and
      // allocator): only the thresholds on the process's memory are off; spilling past the
      // target (the results' own bytes) is exercised all the same.
      for (const char* f : {"--memory-spill-fraction", "--memory-pause-fraction",
                            "--memory-terminate-fraction"})
        args.insert(args.end(), {f, "0"});
    }
    workers.push_back(std::make_unique<Daemon>(std::move(args)));
  }
  for (auto& w : workers) REQUIRE(w->wait_for_stderr("memory limit 128.0 MiB"));
  {
    Client client(registry, address);
    std::vector<long> seeds;
    for (std::size_t i = 0; i < kBlobs; ++i) seeds.push_back(static_cast<long>(i));
    auto blobs = client.map(test::memory_blob, seeds);
    for (auto& b : blobs) b.wait();  // all of them held at once, on the workers
    const std::size_t spilled_files = files_under(local_dir);
    std::vector<Future<std::uint64_t>> sums;
    for (auto& b : blobs) sums.push_back(client.submit(test::memory_blob_checksum, b));
    std::size_t right = 0;
    for (std::size_t i = 0; i < kBlobs; ++i)
      right += sums[i].get() == test::memory_blob_checksum(test::memory_blob(seeds[i]));
    CHECK(right == kBlobs);
    CHECK(spilled_files >= kBlobs / 2);  // at most target * limit of them stay in memory
    for (auto& w : workers) {
      const auto peak = status_field_bytes(w->pid(), "VmHWM");
      INFO(w->stderr_text());
      CHECK(peak > 0);
      if (!kUnderAddressSanitizer) CHECK(peak < kWorkerLimit);
      std::printf("memory test: %zu blobs of %zu MiB, %zu spill files; worker pid %d peak RSS "
                  "%.1f MiB of a %.1f MiB limit\n",
                  kBlobs, (test::kMemoryBlobWords + 1) * 8 >> 20, spilled_files,
                  static_cast<int>(w->pid()), static_cast<double>(peak) / (1 << 20),
                  static_cast<double>(kWorkerLimit) / (1 << 20));
    }
  }
  scheduler.stop();  // closes the workers
  for (auto& w : workers) {
    const auto status = w->wait();
    INFO(w->stderr_text());
    CHECK(status == std::optional<int>(0));
  }
  CHECK(files_under(local_dir) == 0);  // each worker removed its spill directory
}

namespace {

// A worker daemon whose process memory decides everything: results are never spilled for
// their own bytes (target and spill off), only the named threshold is on.
std::unique_ptr<Daemon> start_threshold_worker(const std::string& address, const char* threshold,
                                               const char* fraction) {
  std::vector<std::string> args{
      address, "--no-nanny", "--nthreads", "1", "--name", "limited", "--preload",
      TASKWIRE_MEMORY_PRELOAD_LIB, "--memory-limit", "128MiB", "--no-dashboard", "--log-level",
      "info"};
  for (const char* f : {"--memory-target-fraction", "--memory-spill-fraction",
                        "--memory-pause-fraction", "--memory-terminate-fraction"})
    args.insert(args.end(), {f, f == std::string(threshold) ? fraction : "0"});
  auto worker = std::make_unique<Daemon>(std::move(args));
  REQUIRE(worker->wait_for_stderr("memory limit 128.0 MiB"));
  return worker;
}

// The limits read jemalloc's statistics only where jemalloc serves malloc (the daemon is
// linked as this test is); under a sanitizer RSS counts its shadow memory.
bool jemalloc_counts_memory() {
  if (!kUnderAddressSanitizer && ::dlsym(RTLD_DEFAULT, "mallctl") != nullptr) return true;
  WARN("jemalloc does not serve malloc here: not checking the limits against its statistics");
  return false;
}

struct SchedulerForTest {
  runtime::Context ctx{runtime::Config::from_env(), 2};
  comm::Registry registry{ctx};
  std::unique_ptr<scheduler::SchedulerServer> server;
  SchedulerForTest() {
    comm::register_builtin_backends(registry);
    ctx.start();
    scheduler::SchedulerServerOptions so;
    so.listen = {"tcp://127.0.0.1:0"};
    server = std::make_unique<scheduler::SchedulerServer>(registry, so);
    server->start();
  }
  ~SchedulerForTest() { server->stop(); }
  std::string address() const { return server->addresses().at(0); }
};

// Polled as the monitor would see it; false if the RSS is still past `bytes` after 20 s.
bool wait_for_rss_below(pid_t pid, std::uint64_t bytes) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (status_field_bytes(pid, "VmRSS") >= bytes) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// 80 MiB of results, well past half of a 128 MiB limit with the worker's own ~25 MiB.
auto submit_held_blobs(Client& client) {
  std::vector<long> seeds;
  for (long i = 0; i < 20; ++i) seeds.push_back(i);
  return client.map(test::memory_blob, seeds);
}

}  // namespace

TEST_CASE("worker daemon: results past the pause threshold pause it, and once they are "
          "released it resumes though jemalloc keeps their pages resident",
          "[worker][memory][daemon]") {
  if (!jemalloc_counts_memory()) return;
  SchedulerForTest scheduler;
  auto worker = start_threshold_worker(scheduler.address(), "--memory-pause-fraction", "0.5");
  {
    Client client(scheduler.registry, scheduler.address());
    {
      auto blobs = submit_held_blobs(client);
      if (!worker->wait_for_stderr("paused: process memory")) FAIL(worker->stderr_text());
    }  // every blob released: freed on the worker, its pages kept by jemalloc (dirty_decay_ms:-1)
    if (!worker->wait_for_stderr("resumed: process memory")) FAIL(worker->stderr_text());
    // Past the first threshold on (pause here) the kept pages go back to the system too.
    CHECK(wait_for_rss_below(worker->pid(), kWorkerLimit / 2));
    auto one = client.submit(test::memory_blob, 7L);
    CHECK(client.submit(test::memory_blob_checksum, one).get() ==
          test::memory_blob_checksum(test::memory_blob(7)));
  }
  scheduler.server->stop();  // closes the worker
  CHECK(worker->wait() == std::optional<int>(0));
}

TEST_CASE("worker daemon: results past the terminate threshold close it", "[worker][memory][daemon]") {
  if (!jemalloc_counts_memory()) return;
  SchedulerForTest scheduler;
  auto worker = start_threshold_worker(scheduler.address(), "--memory-terminate-fraction", "0.5");
  Client client(scheduler.registry, scheduler.address());
  auto blobs = submit_held_blobs(client);
  const auto status = worker->wait(std::chrono::seconds(30));
  INFO(worker->stderr_text());
  CHECK(status == std::optional<int>(1));
  CHECK(worker->wait_for_stderr("past 50% of its memory limit 128.0 MiB", std::chrono::seconds(1)));
}
