#include "bench/taskbench/run_graphs.hpp"

#include "bench/taskbench/point_task.hpp"

#include <taskwire/client/future.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace taskwire::taskbench {
namespace {

using Bytes = std::vector<char>;
using Argument = TaskDescription::Argument;
using Intervals = std::vector<std::pair<long, long>>;  // inclusive, as TaskGraph gives them

// A graph's dependencies and reverse dependencies for every dependence set and point,
// computed once (TaskGraph builds a fresh vector on every call).
struct GraphPlan {
  const TaskGraph* graph = nullptr;
  std::vector<std::vector<Intervals>> deps;      // [dset][point]
  std::vector<std::vector<Intervals>> rev_deps;  // [dset][point]
};

GraphPlan plan_of(const TaskGraph& g) {
  GraphPlan plan{&g, {}, {}};
  for (long dset = 0; dset < g.max_dependence_sets(); ++dset) {
    auto& deps = plan.deps.emplace_back();
    auto& rev = plan.rev_deps.emplace_back();
    for (long p = 0; p < g.max_width; ++p) {
      deps.push_back(g.dependencies(dset, p));
      rev.push_back(g.reverse_dependencies(dset, p));
    }
  }
  return plan;
}

// True when no point of timestep t + 1 depends on point p of timestep t.
bool is_leaf(const GraphPlan& plan, long t, long p) {
  const TaskGraph& g = *plan.graph;
  if (t + 1 >= g.timesteps) return true;
  const long first = g.offset_at_timestep(t + 1), last = first + g.width_at_timestep(t + 1) - 1;
  for (auto [a, b] : plan.rev_deps[g.dependence_set_at_timestep(t + 1)][p])
    if (std::max(a, first) <= std::min(b, last)) return false;
  return true;
}

void wait_done(const Future<runtime::Frame>& f) {
  f.wait();
  if (f.status() != client::KeyStatus::memory) f.get();  // throws the task's TaskError
}

// One execution of every graph: rounds are timesteps, submitted for all graphs at once.
class Execution {
 public:
  Execution(Client& client, const std::vector<GraphPlan>& plans, const RunOptions& o)
      : client_(client) {
    long width = 0, steps = 0;
    for (const auto& plan : plans) {
      cursors_.push_back({&plan, std::vector<Argument>(plan.graph->max_width)});
      width += plan.graph->max_width;
      steps = std::max(steps, plan.graph->timesteps);
    }
    rounds_ = static_cast<std::size_t>(steps);
    window_rounds_ = std::max<std::size_t>(2, o.window_tasks / static_cast<std::size_t>(width));
    checkpoint_every_ = std::max<std::size_t>(1, window_rounds_ / 4);
    batch_tasks_ = std::clamp<std::size_t>(o.window_tasks / 8, 1, 256);
    if (o.pin_points)
      for (const auto& w : client.scheduler_info().workers) owners_.push_back(w.address);
  }

  void run() {
    for (std::size_t round = 0; round < rounds_; ++round) {
      if (round >= window_rounds_) wait_held_through(round - window_rounds_);
      add_round(round);
      if (tasks_.size() >= batch_tasks_) submit_batch();
    }
    submit_batch();
    wait_held_through(rounds_);
  }

  /// The last timestep's outputs of each graph, by point (empty futures outside its width).
  const std::vector<std::vector<Future<Bytes>>>& finals() const { return finals_; }

 private:
  struct Cursor {
    const GraphPlan* plan;
    // The previous timestep's tasks, by point: a future once submitted (held until the
    // timestep after them is), before that a Result in the batch being built.
    std::vector<Argument> last;
  };
  struct Role {  // what the client does with a submitted task's future
    std::size_t cursor, round;
    long point;
    bool last_of_graph, held;
  };
  struct Held {
    std::size_t round;
    std::vector<Future<runtime::Frame>> futures;
  };

  void add_round(std::size_t round) {
    const long t = static_cast<long>(round);
    for (std::size_t c = 0; c < cursors_.size(); ++c) {
      Cursor& cur = cursors_[c];
      const TaskGraph& g = *cur.plan->graph;
      if (t >= g.timesteps) continue;
      const long offset = g.offset_at_timestep(t), width = g.width_at_timestep(t);
      const long last_offset = g.offset_at_timestep(t - 1);
      const long last_end = last_offset + g.width_at_timestep(t - 1);
      const auto& deps = cur.plan->deps[g.dependence_set_at_timestep(t)];
      std::vector<Argument> added(g.max_width);
      for (long p = offset; p < offset + width; ++p) {
        TaskDescription task{.function = kPointFunction};
        if (!owners_.empty())
          task.options.workers = {owners_[static_cast<std::size_t>(p) % owners_.size()]};
        task.args.push_back(runtime::to_frame(std::vector<std::int64_t>{g.graph_index, t, p}));
        for (auto [first, last] : deps[p])
          for (long dep = std::max(first, last_offset); dep <= std::min(last, last_end - 1); ++dep)
            task.args.push_back(cur.last[dep]);
        added[p] = TaskDescription::Result{tasks_.size()};
        tasks_.push_back(std::move(task));
        const bool last_of_graph = t + 1 == g.timesteps;
        roles_.push_back({c, round, p, last_of_graph,
                          last_of_graph || round % checkpoint_every_ == 0 || is_leaf(*cur.plan, t, p)});
      }
      cur.last = std::move(added);
      if (std::find(touched_.begin(), touched_.end(), c) == touched_.end()) touched_.push_back(c);
    }
    held_.push_back({round, {}});
  }

  // Sends the tasks added since the last batch as one update_graph, then lets go of what the
  // client no longer needs: the previous batch's last timestep (now held by its dependents).
  void submit_batch() {
    if (tasks_.empty()) return;
    auto futures = client_.submit_tasks(std::exchange(tasks_, {}));
    for (auto c : touched_)
      for (auto& arg : cursors_[c].last)
        if (const auto* r = std::get_if<TaskDescription::Result>(&arg)) arg = futures.at(r->task);
    for (std::size_t i = 0; i < futures.size(); ++i) keep(futures[i], roles_.at(i));
    roles_.clear();
    touched_.clear();
    submitted_rounds_ = held_.size();
  }

  void keep(const Future<runtime::Frame>& future, const Role& role) {
    const Cursor& cur = cursors_[role.cursor];
    if (role.held) held_[role.round].futures.push_back(future);
    if (role.last_of_graph) {
      finals_.resize(cursors_.size());
      finals_[role.cursor].resize(cur.plan->graph->max_width);
      finals_[role.cursor][role.point] = future.as<Bytes>();
    }
  }

  // Waits for (then drops) the held futures of every submitted round up to `round`.
  void wait_held_through(std::size_t round) {
    while (waited_rounds_ < submitted_rounds_ && held_[waited_rounds_].round <= round) {
      for (const auto& future : held_[waited_rounds_].futures) wait_done(future);
      held_[waited_rounds_].futures.clear();
      ++waited_rounds_;
    }
  }

  Client& client_;
  std::vector<Cursor> cursors_;
  std::size_t rounds_ = 0, window_rounds_ = 2, checkpoint_every_ = 1, batch_tasks_ = 1;
  std::vector<TaskDescription> tasks_;  // the batch being built
  std::vector<Role> roles_;
  std::vector<std::size_t> touched_;  // cursors with tasks in this batch
  std::vector<Held> held_;            // one per round added
  std::size_t submitted_rounds_ = 0, waited_rounds_ = 0;
  std::vector<std::string> owners_;  ///< worker of point p: owners_[p % size] (--pin-points)
  std::vector<std::vector<Future<Bytes>>> finals_;
};

// What TaskBench writes into every output: (timestep, point) pairs.
std::string check_output(const TaskGraph& g, long t, long p, const Bytes& out) {
  if (out.size() != g.output_bytes_per_task)
    return fmt::format("{} bytes instead of {}", out.size(), g.output_bytes_per_task);
  for (std::size_t i = 0; i + 2 * sizeof(long) <= out.size(); i += 2 * sizeof(long)) {
    long v[2];
    std::memcpy(v, out.data() + i, sizeof v);
    if (v[0] != t || v[1] != p) return fmt::format("({}, {}) at byte {}", v[0], v[1], i);
  }
  return {};
}

bool check_finals(Client& client, const std::vector<GraphPlan>& plans,
                  const std::vector<std::vector<Future<Bytes>>>& finals) {
  bool ok = true;
  for (std::size_t c = 0; c < plans.size(); ++c) {
    const TaskGraph& g = *plans[c].graph;
    const long t = g.timesteps - 1, offset = g.offset_at_timestep(t);
    std::vector<Future<Bytes>> futures(finals.at(c).begin() + offset,
                                       finals.at(c).begin() + offset + g.width_at_timestep(t));
    auto outputs = client.gather(futures);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const long p = offset + static_cast<long>(i);
      if (auto wrong = check_output(g, t, p, outputs[i]); !wrong.empty()) {
        fmt::print(stderr, "taskwire-taskbench: graph {} timestep {} point {}: wrong output: {}\n",
                   g.graph_index, t, p, wrong);
        ok = false;
      }
    }
  }
  return ok;
}

}  // namespace

bool run_graphs(Client& client, const App& app, const RunOptions& options) {
  std::vector<GraphPlan> plans;
  for (const auto& g : app.graphs) plans.push_back(plan_of(g));
  app.display();
  std::fflush(stdout);
  double elapsed = 0;
  try {
    for (int run = 1; run <= options.runs; ++run) {
      Execution execution(client, plans, options);
      const auto t0 = std::chrono::steady_clock::now();
      execution.run();
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      fmt::print("taskwire: run {} of {}: {:.6f} s\n", run, options.runs, elapsed);
      std::fflush(stdout);
      if (!check_finals(client, plans, execution.finals())) return false;
    }
  } catch (const TaskError& e) {
    fmt::print(stderr, "taskwire-taskbench: a task failed: {}\n", e.what());
    return false;
  }
  app.report_timing(elapsed);
  std::fflush(stdout);
  return true;
}

}  // namespace taskwire::taskbench
