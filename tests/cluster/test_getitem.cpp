// Parts of a result (Client::getitem, Client::unpack): a built-in task on the worker holding
// the result copies out one part, reading the whole in place; over each scheme (--scheme).
// Piece's serialize() and copy constructor count decodes and copies.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <taskwire/runtime/serialize_std.hpp>

#include <boost/serialization/array.hpp>
#include <boost/serialization/utility.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace taskwire;
using test::Cluster;
using test::Connected;

namespace getitem_fns {

std::atomic<int> decodes{0};
std::atomic<int> copies{0};

struct Piece {
  std::vector<long> data;
  Piece() = default;
  explicit Piece(std::vector<long> d) : data(std::move(d)) {}
  Piece(const Piece& o) : data(o.data) { ++copies; }
  Piece(Piece&&) noexcept = default;
  Piece& operator=(const Piece&) = delete;
  Piece& operator=(Piece&&) noexcept = default;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & data;
    if constexpr (Archive::is_loading::value) ++decodes;
  }
};

// n pieces, piece j holding j, j+1, ..., j+len-1.
std::vector<Piece> split(int n, int len) {
  std::vector<Piece> out;
  for (int j = 0; j < n; ++j) {
    std::vector<long> d;
    for (int k = 0; k < len; ++k) d.push_back(j + k);
    out.emplace_back(std::move(d));
  }
  return out;
}
long total(const Piece& p) {
  long s = 0;
  for (long x : p.data) s += x;
  return s;
}
std::tuple<int, std::string, std::vector<int>> three(int x) {
  return {x, std::to_string(x), std::vector<int>(static_cast<std::size_t>(x), x)};
}
std::pair<int, int> divmod(int a, int b) { return {a / b, a % b}; }
std::array<int, 3> triple(int x) { return {x, 2 * x, 3 * x}; }

}  // namespace getitem_fns

TASKWIRE_REGISTER(getitem_fns::split);
TASKWIRE_REGISTER(getitem_fns::total);
TASKWIRE_REGISTER(getitem_fns::three);
TASKWIRE_REGISTER(getitem_fns::divmod);
TASKWIRE_REGISTER(getitem_fns::triple);


TEST_CASE("getitem: a part is copied out where the result is, the rest neither decoded nor "
          "copied",
          "[cluster][getitem]") {
  Connected connected(1);
  auto& client = connected.client;
  auto whole = client.submit(getitem_fns::split, 8, 1000);
  whole.wait();
  getitem_fns::decodes = 0;
  getitem_fns::copies = 0;
  auto part = client.getitem(whole, 3);
  auto sum = client.submit(getitem_fns::total, part);  // reads the part in place
  CHECK(sum.get() == 3 * 1000 + 999 * 1000 / 2);
  CHECK(getitem_fns::copies == 1);  // the part; the other 7 pieces stay where they are
  CHECK(getitem_fns::decodes == 0);
  // Pure: the same part of the same result is one task.
  CHECK(client.getitem(whole, 3).key() == part.key());
  CHECK(client.getitem(whole, 4).key() != part.key());
}

TEST_CASE("getitem: the part task runs on the worker that holds the result",
          "[cluster][getitem]") {
  Connected connected(2);
  auto& client = connected.client;
  auto& cl = connected.cl;
  auto a = client.submit(getitem_fns::split, 4, 100000);
  auto b = client.submit(getitem_fns::split, 4, 100000);
  auto parts = client.unpack(a, 4);
  auto more = client.unpack(b, 4);
  parts.insert(parts.end(), more.begin(), more.end());
  client.wait(parts);
  for (std::size_t j = 0; j < parts.size(); ++j) {
    INFO("part " << j);
    CHECK(cl.who_has(parts[j].key()) == cl.who_has((j < 4 ? a : b).key()));
  }
  auto sums = client.map(getitem_fns::total, parts);
  const auto got = client.gather(sums);
  for (std::size_t j = 0; j < 8; ++j) {
    const long first = static_cast<long>(j % 4);
    CHECK(got[j] == first * 100000 + 99999L * 100000 / 2);
  }
}

TEST_CASE("getitem: tuples, pairs and arrays unpack into futures of their own",
          "[cluster][getitem]") {
  Connected connected(2);
  auto& client = connected.client;
  auto [n, s, v] = client.unpack(client.submit(getitem_fns::three, 3));
  CHECK(n.get() == 3);
  CHECK(s.get() == "3");
  CHECK(v.get() == std::vector<int>{3, 3, 3});
  auto qr = client.submit(getitem_fns::divmod, 17, 5);
  CHECK(client.getitem<0>(qr).get() == 3);
  CHECK(client.getitem<1>(qr).get() == 2);
  auto t = client.submit(getitem_fns::triple, 5);
  std::array<Future<int>, 3> ts = client.unpack(t);
  CHECK(client.gather(std::vector<Future<int>>(ts.begin(), ts.end())) == std::vector<int>{5, 10, 15});
  CHECK(client.getitem(t, 2).get() == 15);
  CHECK(client.getitem<1>(t).get() == 10);
  // A scattered vector: its bytes are decoded once, by the part task.
  auto xs = client.scatter(std::vector<std::string>{"a", "b", "c"});
  CHECK(client.getitem(xs, 1).get() == "b");
}

TEST_CASE("getitem: an index past the end errs the part task with std::out_of_range",
          "[cluster][getitem]") {
  Connected connected(1);
  auto& client = connected.client;
  auto whole = client.submit(getitem_fns::split, 2, 1);
  auto bad = client.getitem(whole, 2);
  try {
    bad.get();
    FAIL("a part past the end was returned");
  } catch (const TaskError& e) {
    CHECK(e.exception_type() == "std::out_of_range");
    CHECK_THAT(e.what(), Catch::Contains("index 2 past the 2 element(s)"));
  }
  CHECK(client.getitem(whole, 1).get().data == std::vector<long>{1});
}
