// Client::scheduler_info() and taskwire::progress() against a scheduler and workers in this
// process, over the scheme given with --scheme.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/progress.hpp>
#include <taskwire/comm/core/error.hpp>
#include <taskwire/runtime/process_info.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <mutex>
#include <numeric>
#include <sstream>

using namespace taskwire;
using namespace std::chrono_literals;
using test::Cluster;

namespace info_fns {
std::mutex gate_mu;
std::condition_variable gate_cv;
bool gate_open = false;

// Holds its worker's thread until the test opens the gate (30 s at most: a failed test must
// not leave workers stuck).
int hold(int x) {
  std::unique_lock lock(gate_mu);
  gate_cv.wait_for(lock, 30s, [] { return gate_open; });
  return x;
}
}  // namespace info_fns

TASKWIRE_REGISTER(info_fns::hold);

namespace {

// Closes the gate for the test's scope, and opens it at the end however the test ends.
struct Gate {
  Gate() { set(false); }
  ~Gate() { open(); }
  void open() { set(true); }
  static void set(bool open) {
    {
      std::lock_guard lock(info_fns::gate_mu);
      info_fns::gate_open = open;
    }
    info_fns::gate_cv.notify_all();
  }
};

std::size_t running(const SchedulerInfo& info) {
  std::size_t n = 0;
  for (const auto& w : info.workers) n += w.running;
  return n;
}

const worker::Worker* worker_at(const Cluster& cl, const std::string& address) {
  for (const auto& w : cl.workers)
    if (w->address() == address) return w.get();
  return nullptr;
}

// Workers w0 (one thread) and w1 (two), registered, and a client.
Client one_and_two_threads(Cluster& cl) {
  cl.add_worker(1);
  cl.add_worker(2);
  REQUIRE(cl.wait_workers(2));
  return Client(cl.fx.registry(), cl.address);
}

}  // namespace

TEST_CASE("cluster: scheduler_info lists the workers with their threads and memory",
          "[cluster][info]") {
  Cluster cl(0);
  Client client = one_and_two_threads(cl);
  const auto info = client.scheduler_info();
  CHECK(info.address == cl.address);
  CHECK(info.addresses == cl.scheduler->addresses());
  CHECK(info.clients == 1);
  REQUIRE(info.workers.size() == 2);
  CHECK(info.workers[0].address < info.workers[1].address);
  CHECK(info.total_threads() == 3);
  for (const auto& w : info.workers) {
    INFO("worker " << w.address);
    const auto* local = worker_at(cl, w.address);
    REQUIRE(local != nullptr);
    CHECK(w.name == local->name());
    CHECK(w.nthreads == (w.name == "w0" ? 1u : 2u));
    CHECK(w.host == runtime::host_name());
    CHECK(w.memory > 0);  // sent with its registration
    CHECK(w.processing == 0);
    CHECK(w.running == 0);
    CHECK(w.keys_held == 0);
  }
  CHECK(info.tasks_by_state.size() == 8);  // every state but forgotten, assigned included
  for (const auto& [state, count] : info.tasks_by_state) CHECK(count == 0);
}

TEST_CASE("cluster: scheduler_info counts tasks running and queued, and tasks by state",
          "[cluster][info]") {
  Cluster cl(0);
  Client client = one_and_two_threads(cl);
  Gate gate;
  auto held = client.map(info_fns::hold, std::vector<int>(6, 1));
  // Every thread takes a task; the workers say so with their next heartbeat.
  SchedulerInfo busy;
  for (int i = 0; i < 500 && running(busy) < 3; ++i) {
    busy = client.scheduler_info();
    if (running(busy) < 3) std::this_thread::sleep_for(20ms);
  }
  REQUIRE(running(busy) == 3);
  std::size_t processing = 0;
  for (const auto& w : busy.workers) {
    CHECK(w.running == w.nthreads);
    CHECK(w.queued == w.processing - w.running);
    processing += w.processing;
  }
  CHECK(busy.tasks("processing") == processing);
  CHECK(busy.tasks("processing") + busy.tasks("queued") == 6);

  gate.open();
  CHECK(client.gather(held) == std::vector<int>(6, 1));
  auto erred = client.submit(cluster_fns::fail_on, 13);
  erred.wait();
  const auto after = client.scheduler_info();
  CHECK(after.tasks("memory") == 6);
  CHECK(after.tasks("erred") == 1);
  CHECK(after.tasks("processing") == 0);
  std::size_t keys_held = 0;
  for (const auto& w : after.workers) keys_held += w.keys_held;
  CHECK(keys_held == 6);
}

TEST_CASE("cluster: progress waits for every future, counts the erred ones, ends with a line",
          "[cluster][progress]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  std::vector<int> xs(20);
  std::iota(xs.begin(), xs.end(), 0);
  xs[0] = xs[5] = 13;  // with xs[13]: three tasks that throw
  auto futures = client.map(cluster_fns::fail_on, xs);
  std::ostringstream out;
  ProgressReportOptions options;
  options.out = &out;
  options.interval = 1h;  // no line but the final one
  options.clock = [] { return std::chrono::steady_clock::time_point{}; };  // 0.0 s throughout
  const auto counts = progress(futures, options);
  CHECK(counts.total == 20);
  CHECK(counts.done == 20);
  CHECK(counts.erred == 3);
  for (const auto& f : futures) CHECK(f.done());
  CHECK(out.str() == "progress: 20/20 tasks done, 3 erred, 0.0 s\n");

  std::ostringstream none;
  options.out = &none;
  CHECK(progress(std::vector<Future<int>>{}, options).total == 0);
  CHECK(none.str() == "progress: 0/0 tasks done, 0.0 s\n");
}

TEST_CASE("cluster: scheduler_info throws CommError once the scheduler is gone",
          "[cluster][info]") {
  Cluster cl(1);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);
  CHECK(client.scheduler_info().workers.size() == 1);
  cl.scheduler->stop();
  // Finished: the workers have gone and the scheduler has closed its clients' comms.
  REQUIRE(cl.scheduler->finished().wait_for(10s) == std::future_status::ready);
  CHECK_THROWS_AS(client.scheduler_info(5s), comm::CommError);
}
