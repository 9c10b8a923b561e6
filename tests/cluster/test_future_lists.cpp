// A std::vector<Future<T>> as one argument of submit and map (the task gets a std::vector<T>);
// submit_tasks, the untyped submission graph:: and the TaskBench driver use; misuse of an
// empty Future or a moved-from Client. Over each scheme (--scheme).
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace taskwire;
using test::Cluster;
using test::Connected;

namespace {
std::string name_of(const void* fn) { return runtime::FunctionRegistry::global().name_of(fn); }

}  // namespace

TEST_CASE("future lists: a vector of futures is one argument, each element a dependency",
          "[cluster][future-lists]") {
  Connected connected(2);
  auto& client = connected.client;
  auto a = client.submit(cluster_fns::inc, 1);  // 2
  auto b = client.submit(cluster_fns::inc, 2);  // 3

  CHECK(client.submit(cluster_fns::sum, std::vector{a, b}).get() == 5);
  CHECK(client.submit(cluster_fns::sum, std::vector{a, b, a}).get() == 7);  // a twice
  // A list for one std::vector parameter, a plain vector value for another.
  CHECK(client.submit(cluster_fns::dot, std::vector{a, b}, std::vector<int>{10, 100}).get() == 320);
  // Futures of tasks not yet done: the task waits for every one.
  auto c = client.submit(cluster_fns::slow_inc, 10);  // 11
  CHECK(client.submit(cluster_fns::sum, std::vector{c, a}).get() == 13);

  // map: one list per task.
  auto sums = client.map(cluster_fns::sum, std::vector<std::vector<Future<int>>>{{a}, {a, b}, {}});
  CHECK(client.gather(sums) == std::vector<long>{2, 5, 0});
}

TEST_CASE("future lists: an empty vector of futures gives the task an empty vector",
          "[cluster][future-lists]") {
  Connected connected(1);
  auto& client = connected.client;
  CHECK(client.submit(cluster_fns::sum, std::vector<Future<int>>{}).get() == 0);
  CHECK(client.submit(cluster_fns::dot, std::vector<Future<int>>{}, std::vector<int>{}).get() == 0);
}

TEST_CASE("future lists: an erred future in the vector fails the task, which names it",
          "[cluster][future-lists]") {
  Connected connected(1);
  auto& client = connected.client;
  auto good = client.submit(cluster_fns::inc, 1);
  auto bad = client.submit(cluster_fns::fail_on, 13);
  auto total = client.submit(cluster_fns::sum, std::vector{good, bad});
  try {
    total.get();
    FAIL("a sum over an erred input returned");
  } catch (const TaskError& e) {
    CHECK(e.key() == total.key());
    CHECK(e.raised_by() == bad.key());
    CHECK_THAT(e.what(), Catch::Contains(bad.key()) && Catch::Contains("bad input 13"));
  }
}

TEST_CASE("future lists: submit_tasks runs functions by name, on values, futures and earlier "
          "tasks of the call",
          "[cluster][future-lists]") {
  Connected connected(1);
  auto& client = connected.client;
  const auto inc = name_of(reinterpret_cast<const void*>(&cluster_fns::inc));
  const auto add = name_of(reinterpret_cast<const void*>(&cluster_fns::add));
  auto seven = client.submit(cluster_fns::inc, 6);
  const auto one = runtime::to_frame(1);
  auto fs = client.submit_tasks({
      {.function = inc, .args = {one}},                                            // 2
      {.function = add, .args = {TaskDescription::Result{0}, one}, .key_prefix = "sum"},  // 3
      {.function = add, .args = {seven.as<runtime::Frame>(), TaskDescription::Result{1}}},  // 10
  });
  REQUIRE(fs.size() == 3);
  CHECK(fs[0].as<int>().get() == 2);
  CHECK(fs[1].key().starts_with("sum-"));
  CHECK(runtime::from_frame<int>(fs[2].get()) == 10);
  CHECK(client.gather(std::vector{fs[2].as<int>(), fs[0].as<int>()}) == std::vector<int>{10, 2});

  CHECK_THROWS_AS(client.submit_tasks({{.function = inc, .args = {TaskDescription::Result{0}}}}),
                  std::invalid_argument);
}

TEST_CASE("future lists: an empty future and a moved-from client throw std::logic_error",
          "[cluster][future-lists]") {
  Future<int> empty;
  CHECK_FALSE(empty.valid());
  CHECK_THROWS_AS(empty.key(), std::logic_error);
  CHECK_THROWS_WITH(empty.get(), Catch::Contains("empty"));
  CHECK_THROWS_AS(empty.wait_for(std::chrono::milliseconds(1)), std::logic_error);
  CHECK_THROWS_AS(empty.status(), std::logic_error);
  CHECK_FALSE(empty.as<long>().valid());
  CHECK_THROWS_AS(empty.add_done_callback([](const Future<int>&) {}), std::logic_error);
  CHECK_THROWS_AS(empty.cancel(), std::logic_error);

  Connected connected(1);
  auto& client = connected.client;
  // As an argument, alone or in a list: nothing is submitted.
  CHECK_THROWS_AS(client.submit(cluster_fns::inc, empty), std::logic_error);
  auto two = client.submit(cluster_fns::inc, 1);
  CHECK_THROWS_AS(client.submit(cluster_fns::sum, std::vector{two, empty}), std::logic_error);
  CHECK_THROWS_AS(client.gather(std::vector{two, empty}), std::logic_error);

  // A moved-from future is empty too.
  auto three = client.submit(cluster_fns::inc, 2);
  auto three_moved = std::move(three);
  CHECK_THROWS_AS(three.get(), std::logic_error);  // NOLINT(bugprone-use-after-move)
  CHECK(three_moved.get() == 3);

  Client moved_to = std::move(client);
  CHECK(moved_to.submit(cluster_fns::sum, std::vector{two}).get() == 2);
  CHECK_THROWS_WITH(client.submit(cluster_fns::inc, 1),  // NOLINT(bugprone-use-after-move)
                    Catch::Contains("moved from"));
  // Every way in through the moved-from client says so, none dereferences a null core.
  const std::vector<Future<int>> futures{two};
  CHECK_THROWS_WITH(client.gather(futures), Catch::Contains("moved from"));
  CHECK_THROWS_WITH(client.as_completed(futures), Catch::Contains("moved from"));
  CHECK_THROWS_WITH(client.wait(futures, {.count = 1}), Catch::Contains("moved from"));
  CHECK_THROWS_WITH(client.map(cluster_fns::inc, std::vector<int>{1}), Catch::Contains("moved from"));
  CHECK_THROWS_WITH(client.scatter(1), Catch::Contains("moved from"));
  CHECK_THROWS_WITH(client.next_order(), Catch::Contains("moved from"));
  CHECK_THROWS_WITH(client.scheduler_info(), Catch::Contains("moved from"));
}
