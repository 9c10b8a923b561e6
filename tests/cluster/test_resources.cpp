// Restrictions end to end, over each scheme (--scheme): worker resources, workers= and
// allow_other_workers, tasks no worker can run yet, and a paused worker.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <thread>

using namespace taskwire;
using namespace std::chrono_literals;
using test::Cluster;

namespace {

template <class T>
std::vector<std::string> holders_of_all(Cluster& cl, const std::vector<Future<T>>& futures) {
  std::vector<std::string> all;
  for (const auto& f : futures)
    for (auto& w : cl.who_has(f.key())) all.push_back(std::move(w));
  return all;
}

/// Polls (at most ten seconds) until `done(scheduler_info())`.
template <class Pred>
bool eventually(Client& client, Pred done) {
  for (int i = 0; i < 500; ++i) {
    if (done(client.scheduler_info())) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

auto with_resources(runtime::Resources r) {
  return [r](worker::WorkerOptions& o) { o.resources = r; };
}

}  // namespace

TEST_CASE("resources: GPU tasks run only on the GPU worker, never two at once on its one GPU",
          "[cluster][resources]") {
  Cluster cl(2);
  auto& gpu = cl.add_worker(3, with_resources({{"GPU", 1}}));
  REQUIRE(cl.wait_workers(3));
  Client client(cl.fx.registry(), cl.address);

  std::vector<Future<int>> futures;
  for (int i = 0; i < 6; ++i)
    futures.push_back(client.submit({.resources = {{"GPU", 1}}}, cluster_fns::exclusive,
                                    "gpu", i));
  for (int i = 0; i < 6; ++i) CHECK(futures[i].get() == i);
  for (const auto& holder : holders_of_all(cl, futures)) CHECK(holder == gpu.address());
  CHECK(cluster_fns::max_overlap("gpu") == 1);

  // scheduler_info shows what it offers, all of it free again.
  const auto info = client.scheduler_info();
  const auto it = std::find_if(info.workers.begin(), info.workers.end(),
                               [&](const WorkerInfo& w) { return w.address == gpu.address(); });
  REQUIRE(it != info.workers.end());
  CHECK(it->resources == runtime::Resources{{"GPU", 1}});
  CHECK(it->used_resources.empty());
}

TEST_CASE("resources: a resource no worker has waits, listed by scheduler_info, until a "
          "worker with it joins",
          "[cluster][resources]") {
  Cluster cl(1);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);
  auto waiting = client.submit({.resources = {{"TPU", 1}}}, cluster_fns::inc, 41);
  CHECK(client.submit(cluster_fns::inc, 1).get() == 2);  // the others run meanwhile
  REQUIRE(eventually(client, [](const SchedulerInfo& info) {
    return info.tasks("no-worker") == 1 && info.unrunnable.size() == 1;
  }));
  const auto info = client.scheduler_info();
  CHECK(info.unrunnable[0].key == waiting.key());
  CHECK(info.unrunnable[0].needs == "resources TPU=1");
  CHECK_FALSE(waiting.done());

  auto& tpu = cl.add_worker(1, with_resources({{"TPU", 2}}));
  CHECK(waiting.get() == 42);
  CHECK(cl.who_has(waiting.key()) == std::vector<std::string>{tpu.address()});
  CHECK(client.scheduler_info().unrunnable.empty());
}

TEST_CASE("workers=: tasks pinned to one worker run there, and allow_other_workers falls back",
          "[cluster][resources]") {
  Cluster cl(3);
  REQUIRE(cl.wait_workers(3));
  Client client(cl.fx.registry(), cl.address);

  auto pinned = client.map({.workers = {"w1"}}, cluster_fns::slow_inc,
                           std::vector<int>{1, 2, 3, 4, 5, 6});
  CHECK(client.gather(pinned) == std::vector<int>{2, 3, 4, 5, 6, 7});
  for (const auto& holder : holders_of_all(cl, pinned)) CHECK(holder == cl.workers[1]->address());

  auto by_address = client.submit({.workers = {cl.workers[2]->address()}}, cluster_fns::inc, 1);
  CHECK(by_address.get() == 2);
  CHECK(cl.who_has(by_address.key()) == std::vector<std::string>{cl.workers[2]->address()});

  // The named worker is absent: with allow_other_workers it runs elsewhere...
  auto loose = client.submit({.workers = {"w7"}, .allow_other_workers = true}, cluster_fns::inc, 2);
  CHECK(loose.get() == 3);
  // ...without, it waits for that worker.
  auto strict = client.submit({.workers = {"w3"}}, cluster_fns::inc, 3);
  REQUIRE(eventually(client, [](const SchedulerInfo& info) { return info.unrunnable.size() == 1; }));
  CHECK_FALSE(strict.done());
  auto& w3 = cl.add_worker();  // named w3
  CHECK(strict.get() == 4);
  CHECK(cl.who_has(strict.key()) == std::vector<std::string>{w3.address()});
}

TEST_CASE("paused: a worker paused by its memory gets no new task", "[cluster][resources]") {
  Cluster cl(1);
  // A limit far below this process's memory: the worker pauses at its first check and stays
  // paused (spilling and terminating off).
  auto& paused = cl.add_worker(2, [](worker::WorkerOptions& o) {
    o.memory.limit = 1 << 20;
    o.memory.target = 0;
    o.memory.spill = 0;
    o.memory.terminate = 0;
    o.memory.pause = 0.8;
  });
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  REQUIRE(eventually(client, [&](const SchedulerInfo& info) {
    return std::any_of(info.workers.begin(), info.workers.end(), [&](const WorkerInfo& w) {
      return w.address == paused.address() && w.paused;
    });
  }));
  auto futures = client.map(cluster_fns::slow_inc, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8});
  const auto result = client.wait(futures, {.timeout = 60s});
  CHECK(result.not_done.empty());
  for (const auto& holder : holders_of_all(cl, futures))
    CHECK(holder == cl.workers[0]->address());
}
