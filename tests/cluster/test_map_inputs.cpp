// Client::map over several sequences (zipped, one task per index) and fixed arguments, as
// Dask's client.map(fn, xs, ys); over each scheme (--scheme).
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using namespace taskwire;
using test::Cluster;
using test::Connected;


TEST_CASE("map inputs: several sequences are zipped, one task per index",
          "[cluster][map-inputs]") {
  Connected connected(2);
  auto& client = connected.client;
  auto sums = client.map(cluster_fns::add, std::vector<int>{1, 2, 3}, std::vector<int>{10, 20, 30});
  REQUIRE(sums.size() == 3);
  CHECK(client.gather(sums) == std::vector<int>{11, 22, 33});

  // Futures and values mixed, within one sequence and across them.
  auto xs = client.scatter_each(std::vector<int>{4, 5});
  auto mixed = client.map(cluster_fns::add, xs, std::vector{sums[0], sums[1]});
  CHECK(client.gather(mixed) == std::vector<int>{15, 27});
  auto words = client.map(cluster_fns::concat, std::vector<std::string>{"a", "b"},
                          std::vector<std::string>{"x", "y"});
  CHECK(client.gather(words) == std::vector<std::string>{"ax", "by"});
}

TEST_CASE("map inputs: fixed(x) passes the same value or future to every task",
          "[cluster][map-inputs]") {
  Connected connected(2);
  auto& client = connected.client;
  auto plus100 = client.map(cluster_fns::add, std::vector<int>{1, 2, 3}, fixed(100));
  CHECK(client.gather(plus100) == std::vector<int>{101, 102, 103});
  // In the first parameter, and a vector value for a vector parameter.
  auto dots = client.map(cluster_fns::dot, fixed(std::vector<int>{1, 2}),
                         std::vector<std::vector<int>>{{1, 0}, {0, 1}, {3, 4}});
  CHECK(client.gather(dots) == std::vector<long>{1, 2, 11});
  // A future: a dependency of every task, read where it is.
  auto centre = client.submit(cluster_fns::inc, 9);  // 10
  auto shifted = client.map(cluster_fns::add, fixed(centre), std::vector<int>{1, 2});
  CHECK(client.gather(shifted) == std::vector<int>{11, 12});
  // With options: the key prefix names each task.
  auto keyed = client.map({.key = "shift"}, cluster_fns::add, std::vector<int>{7}, fixed(centre));
  CHECK(keyed.at(0).key() == "shift-0");
  CHECK(keyed.at(0).get() == 17);
}

TEST_CASE("map inputs: sequences of different lengths are refused, naming the lengths",
          "[cluster][map-inputs]") {
  Connected connected(1);
  auto& client = connected.client;
  CHECK_THROWS_WITH(client.map(cluster_fns::add, std::vector<int>{1, 2, 3}, std::vector<int>{1}),
                    Catch::Contains("(3, 1)"));
  CHECK_THROWS_AS(client.map(cluster_fns::add, std::vector<int>{1}, std::vector<int>{}),
                  std::invalid_argument);
  // Empty sequences of one length: no tasks.
  CHECK(client.map(cluster_fns::add, std::vector<int>{}, fixed(1)).empty());
  CHECK(connected.cl.scheduler_tasks() == 0);
}
