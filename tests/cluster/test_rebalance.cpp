// Client::rebalance (over each scheme, --scheme): the bytes held even out between workers,
// each moved result fetched by its new holder and freed on its old one, every value intact.
#include "tests/cluster/cluster_fixture.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

using namespace taskwire;
using test::Connected;

TEST_CASE("rebalance: chunks scattered onto one worker end half on each, values intact",
          "[cluster][rebalance]") {
  Connected connected(2);
  auto& cl = connected.cl;
  auto& client = connected.client;
  std::vector<std::string> chunks;
  for (int i = 0; i < 8; ++i) chunks.push_back(std::string(64 << 10, static_cast<char>('a' + i)));
  auto futures = client.scatter_each(chunks, {.workers = {"w0"}});
  client.wait(futures);
  auto count_holders = [&] {
    std::map<std::string, int> count;
    for (const auto& f : futures)
      for (const auto& w : cl.who_has(f.key())) ++count[w];
    return count;
  };
  REQUIRE(count_holders().size() == 1);

  const RebalanceResult result = client.rebalance(futures);
  CHECK(result.moved == 4);
  CHECK(result.moved_bytes >= 4 * (64u << 10));
  CHECK(result.failed.empty());
  const auto count = count_holders();
  REQUIRE(count.size() == 2);
  for (const auto& [worker, n] : count) {
    INFO(worker);
    CHECK(n == 4);  // each key on one worker: the sender's copy was freed
  }
  CHECK(client.gather(futures) == chunks);

  // Even already: nothing moves. A worker not connected is named in the answer.
  CHECK(client.rebalance().moved == 0);
  const auto named = client.rebalance({}, {"w0", "nobody"});
  CHECK(named.moved == 0);
  CHECK(named.failed == std::vector<std::string>{"worker nobody: not connected"});
}
