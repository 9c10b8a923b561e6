// The worker's data store: frames by key with byte accounting, safe from several threads.
#include <taskwire/worker/data_store.hpp>

#include "../cluster/log_capture.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

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

namespace {

using test::TempDir;

runtime::Frame bytes(char c, std::size_t n) { return runtime::Frame(std::string(n, c)); }

}  // namespace

TEST_CASE("data store: past its target it spills the least recently used values",
          "[worker][data][spill]") {
  TempDir dir;
  DataStore s({dir.path, 10});
  s.put("a", bytes('a', 4));
  s.put("b", bytes('b', 4));
  CHECK(s.get("a"));  // now b is the least recently used
  s.put("c", bytes('c', 4));
  CHECK(s.spilled("b"));
  CHECK_FALSE(s.spilled("a"));
  CHECK_FALSE(s.spilled("c"));
  CHECK(dir.files() == 1);
  const auto n = s.counts();
  CHECK(n.keys == 3);
  CHECK(n.memory_bytes == 8);
  CHECK(n.spilled_keys == 1);
  CHECK(n.spilled_bytes == 4);
  CHECK(s.nbytes() == 12);  // held, wherever it is
  CHECK(s.contains("b"));
  s.put("d", bytes('d', 4));  // a is now the oldest in memory
  CHECK(s.spilled("a"));
  CHECK_FALSE(s.spilled("c"));
}

TEST_CASE("data store: a spilled value comes back intact when read, and its file goes with it",
          "[worker][data][spill]") {
  TempDir dir;
  std::string big(1000, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  {
    DataStore s({dir.path, 0});
    s.put("v", runtime::Frame(big));
    s.put("w", bytes('w', 10));
    CHECK(s.spill_to(10) == 1000);  // v is older: it goes
    REQUIRE(s.spilled("v"));
    CHECK(s.counts().memory_bytes == 10);
    auto many = s.get_many({"v", "w", "nope"});
    REQUIRE(many.found.size() == 2);
    CHECK(many.found[0].second.view() == big);
    CHECK(many.missing == std::vector<std::string>{"nope"});
    CHECK(s.spilled("v"));  // a peer's read leaves it on disk
    CHECK(s.counts().unspills_total == 0);
    CHECK(s.get("v")->view() == big);  // a local read brings it back
    CHECK_FALSE(s.spilled("v"));
    CHECK(s.counts().unspills_total == 1);
    CHECK(s.spill_oldest() == 10);  // w is the least recently used now
    CHECK(s.spill_oldest() == 1000);
    CHECK(s.counts().spills_total == 2);  // v's file was kept: spilling it again wrote nothing
    CHECK(s.get("v")->view() == big);
    CHECK(s.spill_to(0) == 1000);
    CHECK(s.erase("v"));
    CHECK(dir.files() == 1);  // w's
    CHECK(s.counts().spilled_bytes == 10);
    s.put("w", bytes('W', 3));  // replacing a spilled value drops its file
    CHECK(dir.files() == 0);
    CHECK(s.get("w")->view() == "WWW");
    s.spill_to(0);
  }
  CHECK(dir.files() == 0);  // the store removes its files
}

TEST_CASE("data store: a spill directory it cannot write to keeps the data in memory and says "
          "where", "[worker][data][spill]") {
  TempDir dir;
  const auto not_a_directory = dir.path / "file";
  std::ofstream(not_a_directory) << "x";
  test::LogCapture log(spdlog::level::info);
  DataStore s({not_a_directory, 4});
  s.put("a", bytes('a', 8));
  s.put("b", bytes('b', 8));
  CHECK_FALSE(s.spilled("a"));
  CHECK_FALSE(s.spilled("b"));
  CHECK(s.get("a")->view() == std::string(8, 'a'));
  CHECK(s.get("b")->view() == std::string(8, 'b'));
  const auto n = s.counts();
  CHECK(n.memory_bytes == 16);
  CHECK(n.spill_failures_total >= 2);
  const auto text = log.text();
  CHECK(text.find(not_a_directory.string()) != std::string::npos);
  CHECK(text.find("keeping 'a'") != std::string::npos);
  CHECK(s.spill_oldest() == 0);
}

namespace {

// The one spill file in `dir`.
std::filesystem::path only_file(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  REQUIRE(files.size() == 1);
  return files.front();
}

}  // namespace

TEST_CASE("data store: a spill file deleted, cut short or changed is a lost value, never a "
          "wrong one", "[worker][data][spill]") {
  TempDir dir;
  std::string big(4096, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 13);
  const std::vector<std::string> damages{"deleted", "truncated", "flipped byte", "overwritten"};
  for (const auto& damage : damages) {
    DYNAMIC_SECTION(damage) {
      test::LogCapture log(spdlog::level::info);
      DataStore s({dir.path, 0});
      s.put("v", runtime::Frame(big));
      REQUIRE(s.spill_to(0) == big.size());
      const auto file = only_file(dir.path);
      if (damage == "deleted") {
        std::filesystem::remove(file);
      } else if (damage == "truncated") {
        std::filesystem::resize_file(file, big.size() / 2);
      } else {
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(damage == "flipped byte" ? 100 : 0);
        const std::string junk = damage == "flipped byte" ? std::string(1, '\x55')
                                                          : std::string(big.size(), 'z');
        f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
      }
      CHECK_FALSE(s.get("v"));  // a local read
      const auto many = s.get_many({"v"});  // a peer's or a client's read
      CHECK(many.found.empty());
      CHECK(many.missing == std::vector<std::string>{"v"});
      CHECK(s.contains("v"));  // until the worker forgets it
      CHECK(s.lost("v"));
      CHECK(s.counts().spill_losses_total == 1);  // once, however often it is read
      CHECK(log.text().find("'v' is lost") != std::string::npos);
      CHECK(s.erase("v"));
      CHECK(s.counts().spilled_keys == 0);
    }
  }
}
