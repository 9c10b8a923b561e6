// The benchmarks' statistics: the median's confidence interval decides whether a cost target
// is shown, so it must bracket the median and narrow as samples grow.
#include <bench/stats.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using taskwire::bench::CsvWriter;
using taskwire::bench::median_interval;

TEST_CASE("stats: the median's interval brackets it and takes the sign test's ranks") {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, unsorted
  const auto m = median_interval(v);
  CHECK(m.median == 51);
  // n = 100: ranks floor(50 - 9.8) = 40 and ceil(51 + 9.8) = 61
  CHECK(m.low == 40);
  CHECK(m.high == 61);
}

TEST_CASE("stats: the interval narrows as samples grow, and covers all of a few") {
  std::vector<double> few{3, 1, 2, 5, 4};
  const auto f = median_interval(few);
  CHECK(f.low == 1);
  CHECK(f.high == 5);
  std::vector<double> many;
  for (int i = 0; i < 10000; ++i) many.push_back(i % 100);
  const auto m = median_interval(many);
  CHECK(m.low == 49);
  CHECK(m.high == 50);
  CHECK(median_interval({}).median == 0);
}

TEST_CASE("stats: a CSV file takes rows only under its own columns") {
  const auto path = std::filesystem::temp_directory_path() /
                    ("taskwire-csv-" + std::to_string(::getpid()) + ".csv");
  std::filesystem::remove(path);
  {
    CsvWriter fresh(path.string(), "a,b");
    fresh.row("1,2");
  }
  CHECK_NOTHROW(CsvWriter(path.string(), "a,b").row("3,4"));
  CHECK_THROWS_WITH(CsvWriter(path.string(), "a,b,c"), Catch::Contains("has the columns a,b"));
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(all == "a,b\n1,2\n3,4\n");
  std::filesystem::remove(path);
}
