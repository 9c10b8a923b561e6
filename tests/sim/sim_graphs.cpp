#include "sim_graphs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace taskwire::sim {

std::uint64_t task_value(std::uint64_t seed, const std::vector<std::uint64_t>& inputs) {
  std::uint64_t h = mix64(seed);
  for (std::uint64_t v : inputs) h = mix64(h ^ (v * 0x9e3779b97f4a7c15ULL));
  return h;
}

runtime::Frame seed_frame(const GraphTask& t) {
  const std::uint64_t words[2] = {t.seed, t.always_fails ? 1u : 0u};
  return runtime::Frame::copy_of(words, sizeof words);
}

SeedArg read_seed(const runtime::Frame& f) {
  std::uint64_t words[2] = {0, 0};
  if (f.size() == sizeof words) std::memcpy(words, f.data(), sizeof words);
  return {words[0], words[1] != 0};
}

runtime::Frame value_frame(std::uint64_t v) { return runtime::Frame::copy_of(&v, sizeof v); }

std::uint64_t read_value(const runtime::Frame& f) {
  std::uint64_t v = 0xdeadbeefdeadbeefULL;
  if (f.size() == sizeof v) std::memcpy(&v, f.data(), sizeof v);
  return v;
}

namespace {

class Builder {
 public:
  Builder(Graph& g, Rng& rng, const GraphOptions& o) : g_(g), rng_(rng), o_(o) {}

  const std::string& add(const std::string& suffix, std::vector<std::string> deps) {
    GraphTask t;
    t.key = fmt::format("{}-{}", g_.name, suffix);
    t.deps = std::move(deps);
    t.seed = rng_.next();
    t.retries = rng_.between(0, o_.max_retries);
    t.always_fails = rng_.chance(o_.always_fail_rate);
    std::vector<std::uint64_t> inputs;
    for (const auto& d : t.deps) inputs.push_back(g_.expected.at(d));
    g_.expected[t.key] = task_value(t.seed, inputs);
    g_.tasks.push_back(std::move(t));
    return g_.tasks.back().key;
  }

 private:
  Graph& g_;
  Rng& rng_;
  const GraphOptions& o_;
};

void chain(Graph& g, Builder& b, Rng& rng) {
  const int n = rng.between(2, 25);
  std::string prev;
  for (int i = 0; i < n; ++i) {
    prev = b.add(fmt::format("{}", i), prev.empty() ? std::vector<std::string>{}
                                                    : std::vector<std::string>{prev});
  }
  g.wanted.push_back(prev);
}

// Each point depends on itself and its neighbours at the previous step.
void stencil(Graph& g, Builder& b, Rng& rng) {
  const int width = rng.between(2, 8), steps = rng.between(2, 6);
  std::vector<std::string> row;
  for (int i = 0; i < width; ++i) row.push_back(b.add(fmt::format("0-{}", i), {}));
  for (int t = 1; t < steps; ++t) {
    std::vector<std::string> next;
    for (int i = 0; i < width; ++i) {
      std::vector<std::string> deps;
      for (int j = std::max(0, i - 1); j <= std::min(width - 1, i + 1); ++j) deps.push_back(row[j]);
      next.push_back(b.add(fmt::format("{}-{}", t, i), std::move(deps)));
    }
    row = std::move(next);
  }
  g.wanted = row;
}

// A reduction: leaves, then levels of nodes each summing up to `fanin` of the level below.
void tree(Graph& g, Builder& b, Rng& rng) {
  const int leaves = rng.between(2, 32), fanin = rng.between(2, 4);
  std::vector<std::string> level;
  for (int i = 0; i < leaves; ++i) level.push_back(b.add(fmt::format("leaf-{}", i), {}));
  for (int depth = 1; level.size() > 1; ++depth) {
    std::vector<std::string> up;
    for (std::size_t i = 0; i < level.size(); i += static_cast<std::size_t>(fanin)) {
      const auto end = std::min(level.size(), i + static_cast<std::size_t>(fanin));
      up.push_back(b.add(fmt::format("sum-{}-{}", depth, up.size()),
                         std::vector<std::string>(level.begin() + static_cast<std::ptrdiff_t>(i),
                                                  level.begin() + static_cast<std::ptrdiff_t>(end))));
    }
    level = std::move(up);
  }
  g.wanted = level;
}

// Layers in which every node needs every node of the layer before (a shuffle).
void all_to_all(Graph& g, Builder& b, Rng& rng) {
  const int layers = rng.between(2, 4), width = rng.between(2, 6);
  std::vector<std::string> prev;
  for (int l = 0; l < layers; ++l) {
    std::vector<std::string> cur;
    for (int i = 0; i < width; ++i) cur.push_back(b.add(fmt::format("{}-{}", l, i), prev));
    prev = std::move(cur);
  }
  g.wanted = prev;
}

void fill_ancestors(Graph& g) {
  std::map<std::string, const GraphTask*> by_key;
  for (const auto& t : g.tasks) by_key[t.key] = &t;
  for (const auto& w : g.wanted) {
    std::set<std::string> seen{w};
    std::vector<std::string> todo{w};
    while (!todo.empty()) {
      const std::string k = todo.back();
      todo.pop_back();
      for (const auto& d : by_key.at(k)->deps)
        if (seen.insert(d).second) todo.push_back(d);
    }
    g.ancestors[w].assign(seen.begin(), seen.end());
  }
}

}  // namespace

Graph make_graph(int index, Rng& rng, const GraphOptions& options) {
  static const char* const kinds[] = {"chain", "stencil", "tree", "a2a"};
  const std::size_t kind = rng.below(4);
  Graph g;
  g.name = fmt::format("g{}-{}", index, kinds[kind]);
  Builder b(g, rng, options);
  switch (kind) {
    case 0: chain(g, b, rng); break;
    case 1: stencil(g, b, rng); break;
    case 2: tree(g, b, rng); break;
    default: all_to_all(g, b, rng); break;
  }
  // Now and then an intermediate result is wanted too: it must stay in memory.
  if (g.tasks.size() > 2 && rng.chance(0.3)) {
    const std::string& extra = g.tasks[rng.below(g.tasks.size())].key;
    if (std::find(g.wanted.begin(), g.wanted.end(), extra) == g.wanted.end())
      g.wanted.push_back(extra);
  }
  fill_ancestors(g);
  return g;
}

}  // namespace taskwire::sim
