// split_graph: a submission cut into update_graph parts that each fit under the comm limits.
#include <taskwire/client/graph_split.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <map>
#include <set>
#include <string>

using namespace taskwire;
using client::GraphPart;
using client::GraphSplitOptions;
using client::split_graph;

namespace {

protocol::TaskSpec task(std::string key, std::vector<std::uint32_t> frame_args,
                        std::vector<std::string> deps = {}) {
  protocol::TaskSpec t{std::move(key), std::string("fn"), {}, deps, 0, 0};
  for (auto i : frame_args) t.args.push_back({protocol::ArgSpec::frame, i, {}});
  for (auto& d : deps) t.args.push_back({protocol::ArgSpec::dependency, 0, d});
  return t;
}

std::vector<runtime::Frame> frames_named(int n) {
  std::vector<runtime::Frame> frames;
  for (int i = 0; i < n; ++i) frames.emplace_back(fmt::format("frame-{}", i));
  return frames;
}

GraphSplitOptions small(std::size_t tasks, std::uint64_t frames) {
  GraphSplitOptions o;
  o.max_tasks = tasks;
  o.max_frames = frames;
  return o;
}

// Each part's frame args point at the bytes the submission gave them, each part within the
// limits, every task once, and each wants exactly its own tasks.
void check_parts(const std::vector<GraphPart>& parts, const std::map<std::string, std::string>& arg_of,
                 const GraphSplitOptions& o) {
  std::set<std::string> seen;
  for (const auto& p : parts) {
    CHECK(p.graph.tasks.size() <= o.max_tasks);
    CHECK(p.frames.size() <= o.max_frames);
    REQUIRE(p.graph.wanted.size() == p.graph.tasks.size());
    for (std::size_t i = 0; i < p.graph.tasks.size(); ++i) {
      const auto& t = p.graph.tasks[i];
      CHECK(p.graph.wanted[i] == t.key);
      CHECK(seen.insert(t.key).second);
      for (const auto& a : t.args)
        if (a.kind == protocol::ArgSpec::frame) {
          REQUIRE(a.frame_index < p.frames.size());
          CHECK(std::string(p.frames[a.frame_index].view()) == arg_of.at(t.key));
        }
    }
  }
  CHECK(seen.size() == arg_of.size());
}

}  // namespace

TEST_CASE("graph split: a submission within the limits is one part, as it was", "[client]") {
  std::vector<protocol::TaskSpec> tasks{task("b", {1}, {"a"}), task("a", {0})};
  auto parts = split_graph(tasks, frames_named(2), small(10, 10));
  REQUIRE(parts.size() == 1);
  REQUIRE(parts[0].graph.tasks.size() == 2);
  CHECK(parts[0].graph.tasks[0].key == "b");  // not reordered: the scheduler sorts it out
  CHECK(parts[0].graph.wanted == std::vector<std::string>{"b", "a"});
  CHECK(parts[0].frames.size() == 2);
}

TEST_CASE("graph split: a map past the frame limit becomes parts under it", "[client]") {
  const int n = 1000;
  std::vector<protocol::TaskSpec> tasks;
  std::map<std::string, std::string> arg_of;
  for (int i = 0; i < n; ++i) {
    tasks.push_back(task(fmt::format("t{}", i), {static_cast<std::uint32_t>(i)}));
    arg_of[fmt::format("t{}", i)] = fmt::format("frame-{}", i);
  }
  const auto o = small(10'000, 64);
  auto parts = split_graph(tasks, frames_named(n), o);
  CHECK(parts.size() == (n + 63) / 64);
  check_parts(parts, arg_of, o);
  CHECK(parts[0].graph.tasks[0].key == "t0");  // submission order kept
  CHECK(parts.back().graph.tasks.back().key == "t999");
}

TEST_CASE("graph split: a dependency is in the same part or an earlier one", "[client]") {
  // A chain submitted last-first, with a frame each: one task per part at most 3 tasks.
  std::vector<protocol::TaskSpec> tasks;
  std::map<std::string, std::string> arg_of;
  const int n = 10;
  for (int i = n - 1; i >= 0; --i) {
    std::vector<std::string> deps;
    if (i > 0) deps.push_back(fmt::format("c{}", i - 1));
    tasks.push_back(task(fmt::format("c{}", i), {static_cast<std::uint32_t>(i)}, deps));
    arg_of[fmt::format("c{}", i)] = fmt::format("frame-{}", i);
  }
  const auto o = small(3, 100);
  auto parts = split_graph(tasks, frames_named(n), o);
  check_parts(parts, arg_of, o);
  std::set<std::string> sent;
  for (const auto& p : parts) {
    for (const auto& t : p.graph.tasks) sent.insert(t.key);
    for (const auto& t : p.graph.tasks)
      for (const auto& d : t.dependencies) CHECK(sent.count(d) == 1);
  }
}

TEST_CASE("graph split: a frame shared by tasks goes with every part that uses it", "[client]") {
  std::vector<protocol::TaskSpec> tasks;
  std::map<std::string, std::string> arg_of;
  for (int i = 0; i < 10; ++i) {
    tasks.push_back(task(fmt::format("s{}", i), {0, 0}));  // both args the same frame
    arg_of[fmt::format("s{}", i)] = "frame-0";
  }
  const auto o = small(4, 100);
  auto parts = split_graph(tasks, frames_named(1), o);
  REQUIRE(parts.size() == 3);
  check_parts(parts, arg_of, o);
  for (const auto& p : parts) CHECK(p.frames.size() == 1);  // once per part
}

TEST_CASE("graph split: a task past the limits on its own gets a part of its own", "[client]") {
  std::vector<protocol::TaskSpec> tasks{task("small1", {0}), task("huge", {1, 2, 3, 4, 5}),
                                        task("small2", {6})};
  auto parts = split_graph(tasks, frames_named(7), small(100, 3));
  REQUIRE(parts.size() == 3);
  CHECK(parts[1].graph.tasks.at(0).key == "huge");
  CHECK(parts[1].frames.size() == 5);
  CHECK(parts[2].graph.tasks.at(0).key == "small2");
}
