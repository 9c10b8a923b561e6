// Keys made by different clients never meet: a client's name (a pid, a user's choice, the
// context's name) is not unique, so keys carry 128 random bits of the client's own.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

using namespace taskwire;
using namespace std::chrono_literals;
using test::Cluster;

TEST_CASE("cluster: two clients with the same name each get their own results", "[cluster][identity]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  // Both take their name from the one context they share, as two processes with the same
  // pid (containers) take the same default name.
  Client first(cl.fx.registry(), cl.address);
  Client second(cl.fx.registry(), cl.address);
  auto a = first.submit(cluster_fns::inc, 100);
  auto b = second.submit(cluster_fns::inc, 1);
  CHECK(a.key() != b.key());
  CHECK(a.get() == 101);
  CHECK(b.get() == 2);
  // Later keys too: each client counts from 1, so a shared prefix would collide on every n.
  std::vector<int> xs{10, 20, 30}, ys{1, 2, 3};
  auto as = first.map(cluster_fns::inc, xs);
  auto bs = second.map(cluster_fns::inc, ys);
  CHECK(first.gather(as) == std::vector<int>{11, 21, 31});
  CHECK(second.gather(bs) == std::vector<int>{2, 3, 4});
}

TEST_CASE("cluster: twenty threads each with a client at once: every result right",
          "[cluster][identity]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  constexpr int kThreads = 20;
  std::atomic<int> right{0};
  std::latch opened(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Client client(cl.fx.registry(), cl.address);
      // A gate: every client is connected before any submits, so their keys are live at once.
      opened.arrive_and_wait();
      auto f = client.submit(cluster_fns::inc, 1000 * t);
      auto g = client.submit(cluster_fns::add, f, t);
      if (f.get() == 1000 * t + 1 && g.get() == 1001 * t + 1) ++right;
    });
  for (auto& th : threads) th.join();
  CHECK(right.load() == kThreads);
}
