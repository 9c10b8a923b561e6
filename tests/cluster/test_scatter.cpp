// Scatter straight to workers (over each scheme, --scheme): the bytes go from the client to
// the workers, spread evenly, or to every worker with broadcast; the scheduler records who
// holds what and holds none of the bytes.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

using namespace taskwire;
using test::Cluster;
using test::Connected;

namespace {

// How many of `futures` each worker holds, by the scheduler's account.
template <class T>
std::map<std::string, int> holders(Cluster& cl, const std::vector<Future<T>>& futures) {
  std::map<std::string, int> count;
  for (const auto& f : futures)
    for (const auto& w : cl.who_has(f.key())) ++count[w];
  return count;
}
}  // namespace

TEST_CASE("scatter: 16 equal chunks land 8 and 8 on two workers, none through the scheduler",
          "[cluster][scatter]") {
  Connected connected(2);
  auto& cl = connected.cl;
  auto& client = connected.client;
  std::vector<std::string> chunks;
  for (int i = 0; i < 16; ++i) chunks.push_back(std::string(64 << 10, static_cast<char>('a' + i)));
  auto futures = client.scatter_each(chunks);
  client.wait(futures);
  const auto count = holders(cl, futures);
  REQUIRE(count.size() == 2);
  for (const auto& [worker, n] : count) {
    INFO(worker);
    CHECK(n == 8);
  }
  // The scheduler holds none of the bytes: its specs carry no frames.
  CHECK(cl.scheduler->held_spec_bytes() == 0);
  // Each in memory, without a task run for it, and right wherever it is read.
  CHECK(client.gather(futures) == chunks);
  auto joined = client.submit(cluster_fns::concat, futures[0], futures[15]);
  CHECK(joined.get() == chunks[0] + chunks[15]);
  // A second scatter evens out what the workers hold: 3 more go where fewer bytes are.
  auto big = client.scatter(std::string(1 << 20, 'z'));
  auto more = client.scatter_each(std::vector<std::string>(3, std::string(64 << 10, 'y')));
  client.wait(more);
  const auto big_on = cl.who_has(big.key());
  REQUIRE(big_on.size() == 1);
  for (const auto& f : more) CHECK(cl.who_has(f.key()) != big_on);
}

TEST_CASE("scatter: broadcast places a copy on every worker, workers= only on those named",
          "[cluster][scatter]") {
  Connected connected(3);
  auto& cl = connected.cl;
  auto& client = connected.client;
  auto everywhere = client.scatter(std::vector<int>{1, 2, 3}, {.broadcast = true});
  everywhere.wait();
  CHECK(cl.who_has(everywhere.key()).size() == 3);
  CHECK(cl.scheduler->held_spec_bytes() == 0);
  CHECK(client.submit(cluster_fns::sum, everywhere).get() == 6);

  auto on_w1 = client.scatter_each(std::vector<int>{4, 5, 6}, {.workers = {"w1"}});
  client.wait(on_w1);
  const auto w1 = cl.workers.at(1)->address();
  for (const auto& f : on_w1) CHECK(cl.who_has(f.key()) == std::vector<std::string>{w1});
  auto two = client.scatter(std::string("x"), {.workers = {"w0", "w2"}, .broadcast = true});
  two.wait();
  CHECK(cl.who_has(two.key()).size() == 2);
  CHECK_THROWS_AS(client.scatter(1, {.workers = {"nobody"}}), std::invalid_argument);
  CHECK(client.gather(on_w1) == std::vector<int>{4, 5, 6});
}

TEST_CASE("scatter: data whose only holder left errs its future, saying it was lost",
          "[cluster][scatter]") {
  Connected connected(2);
  auto& cl = connected.cl;
  auto& client = connected.client;
  auto data = client.scatter(std::string("precious"), {.workers = {"w0"}});
  data.wait();
  REQUIRE(cl.who_has(data.key()) == std::vector<std::string>{cl.workers.at(0)->address()});
  cl.workers.at(0)->stop();
  auto read = client.submit(cluster_fns::concat, data, std::string("!"));
  CHECK_THROWS_WITH(read.get(), Catch::Contains("scattered data lost"));
}
