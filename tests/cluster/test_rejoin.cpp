// A worker that joins again in the place of one the scheduler dropped (taskwire-worker after
// a blip: Worker::keep_data, then a new Worker with it) brings its results back: those the
// scheduler holds in memory are its replicas again; the rest it is told to free.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace taskwire;
using namespace std::chrono_literals;
using test::Cluster;

TEST_CASE("cluster: a worker joining again with its results: the scheduler counts those it "
          "holds as replicas and frees the rest", "[cluster][rejoin]") {
  Cluster cl(0);
  auto& first = cl.add_worker(1);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);
  auto kept_future = client.submit(cluster_fns::inc, 41);
  auto dropped_future = client.submit(cluster_fns::inc, 1);
  REQUIRE(kept_future.get() == 42);
  REQUIRE(dropped_future.get() == 2);
  const std::string kept_key = kept_future.key(), dropped_key = dropped_future.key();
  REQUIRE(cl.who_has(kept_key) == std::vector<std::string>{first.address()});

  // The worker leaves with both results; the scheduler computes the one still wanted on
  // another worker and forgets the other.
  cl.add_worker(1);
  REQUIRE(cl.wait_workers(2));
  first.stop();
  auto kept = first.keep_data();
  REQUIRE(kept);
  dropped_future = {};
  REQUIRE(cl.wait_until([&] {
    const auto h = cl.who_has(kept_key);
    return h.size() == 1 && h[0] != first.address();
  }));
  REQUIRE(cl.wait_until([&] { return cl.scheduler_tasks() == 1; }));

  worker::WorkerOptions o;
  o.scheduler_address = cl.address;
  o.name = "w0-again";
  cl.workers.push_back(std::make_unique<worker::Worker>(cl.fx.context(), cl.fx.registry(), o,
                                                        std::move(kept)));
  auto& again = *cl.workers.back();
  again.start();
  REQUIRE(cl.wait_until([&] { return cl.who_has(kept_key).size() == 2; }));
  const auto now_held = cl.who_has(kept_key);
  CHECK(std::count(now_held.begin(), now_held.end(), again.address()) == 1);
  // The result nobody wants any more was freed there; the kept one is served from it.
  REQUIRE(cl.wait_until([&] { return !again.data().contains(dropped_key); }));
  CHECK(again.data().contains(kept_key));
  CHECK(kept_future.get() == 42);
  kept_future = {};
  REQUIRE(cl.wait_until([&] { return cl.scheduler_tasks() == 0 && again.data().size() == 0; }));
}
