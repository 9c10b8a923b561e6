// The worker's data store: frames by key with byte accounting, safe from several threads.
#include <taskwire/worker/data_store.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

using namespace taskwire;
using taskwire::worker::DataStore;

TEST_CASE("data store: put, get, replace and erase keep the byte count", "[worker][data]") {
  DataStore s;
  runtime::Frame a(std::string_view("12345"));
  s.put("a", a);
  s.put("b", runtime::Frame(std::string_view("xy")));
  CHECK(s.size() == 2);
  CHECK(s.nbytes() == 7);
  CHECK(s.get("a")->data() == a.data());  // shared, not copied
  s.put("a", runtime::Frame(std::string_view("1")));
  CHECK(s.nbytes() == 3);
  CHECK(s.erase("a"));
  CHECK_FALSE(s.erase("a"));
  CHECK_FALSE(s.get("a"));
  CHECK(s.nbytes() == 2);
  CHECK(s.keys() == std::vector<std::string>{"b"});
}

TEST_CASE("data store: get_many splits found and missing keys in request order",
          "[worker][data]") {
  DataStore s;
  s.put("x", runtime::Frame(std::string_view("X")));
  s.put("z", runtime::Frame(std::string_view("Z")));
  auto r = s.get_many({"z", "y", "x"});
  REQUIRE(r.found.size() == 2);
  CHECK(r.found[0].first == "z");
  CHECK(r.found[1].second.view() == "X");
  CHECK(r.missing == std::vector<std::string>{"y"});
}

TEST_CASE("data store: concurrent writers and readers keep a consistent count",
          "[worker][data]") {
  DataStore s;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&s, t] {
      for (int i = 0; i < 500; ++i) {
        const auto key = std::to_string(t) + "-" + std::to_string(i);
        s.put(key, runtime::Frame(std::string_view("abcd")));
        (void)s.get_many({key, "nope"});
        if (i % 2) s.erase(key);
      }
    });
  for (auto& th : threads) th.join();
  CHECK(s.size() == 4 * 250);
  CHECK(s.nbytes() == 4 * 250 * 4);
}
