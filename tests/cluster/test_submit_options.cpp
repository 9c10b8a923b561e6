// SubmitOptions: retries, explicit keys, and map with options, over each scheme (--scheme).
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

using namespace taskwire;
using test::Cluster;

TEST_CASE("submit options: retries rerun a failing task, and it errs once they are used up",
          "[cluster][submit-options]") {
  Cluster cl(1);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);

  // Fails on its first two calls, succeeds on the third.
  auto enough = client.submit({.retries = 2}, cluster_fns::flaky, "enough", 2);
  CHECK(enough.get() == 3);
  CHECK(cluster_fns::calls_of("enough") == 3);

  auto too_few = client.submit({.retries = 1}, cluster_fns::flaky, "too-few", 2);
  try {
    too_few.get();
    FAIL("a task that failed twice with one retry returned");
  } catch (const TaskError& e) {
    CHECK(e.message().find("flaky too-few call 2") != std::string::npos);
  }
  CHECK(cluster_fns::calls_of("too-few") == 2);

  // Without options nothing is retried.
  CHECK_THROWS_AS(client.submit(cluster_fns::flaky, "none", 1).get(), TaskError);
  CHECK(cluster_fns::calls_of("none") == 1);
}

TEST_CASE("submit options: an explicit key is the future's, and equal keys share one task",
          "[cluster][submit-options]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);

  auto first = client.submit({.key = "shared-task"}, cluster_fns::flaky, "first", 0);
  CHECK(first.key() == "shared-task");
  CHECK(first.get() == 1);
  // Different arguments under the same key: the task already known is the answer; the second
  // submission's function never runs.
  auto second = client.submit({.key = "shared-task"}, cluster_fns::flaky, "second", 0);
  CHECK(second.key() == "shared-task");
  CHECK(second.get() == 1);
  CHECK(cluster_fns::calls_of("first") == 1);
  CHECK(cluster_fns::calls_of("second") == 0);

  auto generated = client.submit(cluster_fns::inc, 1);
  CHECK(generated.key() != "shared-task");
  CHECK(generated.get() == 2);
}

TEST_CASE("submit options: map takes the key as a prefix of one key per input",
          "[cluster][submit-options]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);

  auto futures = client.map({.key = "incs"}, cluster_fns::inc, std::vector<int>{10, 20, 30});
  REQUIRE(futures.size() == 3);
  CHECK(futures[0].key() == "incs-0");
  CHECK(futures[1].key() == "incs-1");
  CHECK(futures[2].key() == "incs-2");
  CHECK(client.gather(futures) == std::vector<int>{11, 21, 31});
}
