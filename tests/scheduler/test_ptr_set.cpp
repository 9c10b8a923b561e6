// scheduler/ptr_set.hpp against std::set as the model, below and above the size where it
// starts indexing, with erases from the middle (which move the last element).
#include <taskwire/scheduler/ptr_set.hpp>

#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <vector>

using taskwire::scheduler::PtrSet;

namespace {
struct Item {
  int id = 0;
};

void check_same(const PtrSet<Item>& s, const std::set<Item*>& model) {
  REQUIRE(s.size() == model.size());
  CHECK(s.empty() == model.empty());
  const std::set<Item*> listed(s.begin(), s.end());
  CHECK(listed == model);  // each element once
  for (Item* p : model) CHECK(s.contains(p));
}
}  // namespace

TEST_CASE("PtrSet: behaves as a set, small and indexed", "[scheduler]") {
  std::vector<Item> items(300);
  for (std::size_t n : {5ul, PtrSet<Item>::kIndexFrom, PtrSet<Item>::kIndexFrom + 1, 300ul}) {
    INFO(n << " items");
    PtrSet<Item> s;
    std::set<Item*> model;
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(s.insert(&items[i]));
      model.insert(&items[i]);
    }
    CHECK_FALSE(s.insert(&items[0]));  // already there
    check_same(s, model);
    std::mt19937 rng(static_cast<unsigned>(n));
    for (int round = 0; round < 1000; ++round) {
      Item* p = &items[rng() % n];
      if (rng() % 2) {
        CHECK(s.erase(p) == model.erase(p));
      } else {
        CHECK(s.insert(p) == model.insert(p).second);
      }
      CHECK(s.count(p) == model.count(p));
    }
    check_same(s, model);
    CHECK(s.erase(&items[299]) == model.erase(&items[299]));
    s.clear();
    CHECK(s.empty());
    CHECK_FALSE(s.contains(&items[0]));
    CHECK(s.insert(&items[0]));
  }
}
