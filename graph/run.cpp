#include <taskwire/graph/run.hpp>

#include <taskwire/graph/progress.hpp>
#include <taskwire/runtime/force_exit.hpp>

#include <fmt/format.h>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace taskwire::graph {

MapError::MapError(std::string key, std::size_t input, std::string message)
    : TaskError(std::move(key), message), input_(input),
      what_(fmt::format("map input {} failed: {}", input, message)) {}

namespace detail {
namespace {

using client::KeyStatus;
constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
constexpr auto kTick = std::chrono::milliseconds(100);  // progress redraw and sweep interval

// One execution of a Job. Slots are the plan's: leaves (initial value, then map tasks), then
// reduce nodes; without a plan, just the map tasks. Confined to execute's thread.
class Runner {
 public:
  Runner(Client& client, const Job& job, const ExecuteOptions& options)
      : client_(client), job_(job), options_(options), offset_(job.initial ? 1 : 0),
        leaves_(offset_ + job.tasks.size()),
        nodes_(job.plan ? job.plan->nodes.size() : 0),
        slots_(leaves_ + nodes_),
        consumer_(slots_.size(), npos),
        in_call_(slots_.size(), npos),
        track_tasks_(!job.plan || nodes_ == 0 || options.max_workers > 0 || options.progress.bar ||
                     options.progress.callback || options.progress.log_every > 0),
        progress_(options.progress, job.tasks.size() + nodes_) {
    if (job.plan && job.plan->leaves != leaves_)
      throw std::logic_error("graph: the reduce plan does not match the map tasks");
    if (job_.initial) slots_[0].submitted = slots_[0].done = true;
    for (std::size_t k = 0; k < nodes_; ++k)
      for (auto part : job.plan->nodes[k].parts) consumer_[part] = leaves_ + k;
    remaining_ = (track_tasks_ ? job.tasks.size() : 0) + nodes_;
    assign_priorities();
  }

  std::vector<runtime::Frame> run() {
    submit_ready();
    std::size_t next = track_tasks_ ? 0 : leaves_;
    while (remaining_ > 0) {
      while (slots_[next].done) ++next;
      if (!slots_[next].submitted) throw std::logic_error("graph: waiting on an unsubmitted task");
      if (slots_[next].future.wait_for(kTick)) {
        observe(next);
      } else {
        sweep(next);
        progress_.update(job_.tasks.size() + nodes_ - remaining_);  // also when none finished
      }
      submit_ready();
    }
    progress_.finish();
    if (!job_.plan) {
      std::vector<Future<runtime::Frame>> futures;
      futures.reserve(job_.tasks.size());
      for (const auto& s : slots_) futures.push_back(s.future);
      return client_.gather(futures);
    }
    const auto root = job_.plan->root;
    if (job_.initial && root == 0) return {*job_.initial};
    return {slots_[root].future.get()};
  }

 private:
  struct Slot {
    Future<runtime::Frame> future;  // empty once let go of (maybe_release)
    std::string key;
    bool submitted = false;
    bool done = false;
  };

  bool is_task(std::size_t s) const { return s >= offset_ && s < leaves_; }
  bool keep(std::size_t s) const { return !job_.plan || s == job_.plan->root; }

  // Lower runs first: map task i, then as soon as its inputs are ready, the node above it (as
  // a depth-first order would), so partial results are combined and freed early.
  void assign_priorities() {
    priority_.assign(slots_.size(), 0);
    const std::int64_t stride = 64;  // more than the depth of any plan
    for (std::size_t s = 0; s < leaves_; ++s) priority_[s] = static_cast<std::int64_t>(s) * stride;
    for (std::size_t k = 0; k < nodes_; ++k) {
      std::int64_t p = 0;
      for (auto part : job_.plan->nodes[k].parts) p = std::max(p, priority_[part]);
      priority_[leaves_ + k] = p + 1;
    }
    base_ = client_.next_order();
  }

  TaskDescription task_for(std::string function, std::size_t s) const {
    TaskDescription task;
    task.function = std::move(function);
    task.order = base_ + priority_[s];
    task.options.priority = options_.priority;
    task.options.retries = options_.retries;
    task.options.resources = options_.resources;
    task.options.workers = options_.workers;
    task.options.allow_other_workers = options_.allow_other_workers;
    return task;
  }

  // A reduce node: combine(name, [steps,] batch flags, params..., parts...).
  TaskDescription node_task(std::size_t k) {
    const auto& parts = job_.plan->nodes[k].parts;
    const auto& steps = job_.plan->nodes[k].steps;
    auto task = task_for(steps.empty() ? kCombine : kCombineSteps, leaves_ + k);
    task.key_prefix = job_.combine;
    std::vector<std::uint8_t> batch;
    for (auto p : parts) batch.push_back(job_.chunked && p < leaves_ ? 1 : 0);
    task.args.push_back(combine_name());
    if (!steps.empty()) task.args.push_back(runtime::to_frame(steps));
    task.args.push_back(runtime::to_frame(batch));
    for (const auto& p : job_.params) task.args.push_back(p);
    for (auto p : parts) {
      if (job_.initial && p == 0) task.args.push_back(*job_.initial);
      else if (in_call_[p] != npos) task.args.push_back(TaskDescription::Result{in_call_[p]});
      else task.args.push_back(slots_[p].future);
    }
    return task;
  }

  // Submits the map tasks the window allows, then every node whose parts are all submitted, as
  // one update_graph. Nodes become ready in plan order, as map tasks are submitted in order.
  // Frames several tasks share (inputs, the combine's name, params) are sent once.
  void submit_ready() {
    std::vector<TaskDescription> tasks;
    std::vector<std::size_t> submitted;
    while (next_task_ < job_.tasks.size() &&
           (options_.max_workers == 0 || in_flight_ < options_.max_workers)) {
      const auto s = offset_ + next_task_;
      auto task = task_for(job_.function, s);
      for (auto i : job_.tasks[next_task_].args) task.args.push_back(job_.frames.at(i));
      for (auto i : job_.tasks[next_task_].futures) task.args.push_back(job_.futures.at(i));
      tasks.push_back(std::move(task));
      submitted.push_back(s);
      slots_[s].submitted = true;
      in_call_[s] = tasks.size() - 1;
      ++next_task_;
      ++in_flight_;
    }
    for (; next_node_ < nodes_; ++next_node_) {
      const auto& parts = job_.plan->nodes[next_node_].parts;
      if (!std::all_of(parts.begin(), parts.end(), [&](auto p) { return slots_[p].submitted; }))
        break;
      tasks.push_back(node_task(next_node_));
      submitted.push_back(leaves_ + next_node_);
      slots_[leaves_ + next_node_].submitted = true;
      in_call_[leaves_ + next_node_] = tasks.size() - 1;
    }
    if (tasks.empty()) return;
    auto futures = client_.submit_tasks(std::move(tasks));
    for (std::size_t i = 0; i < futures.size(); ++i) {
      auto& slot = slots_[submitted[i]];
      in_call_[submitted[i]] = npos;
      slot.key = futures[i].key();
      slot.future = std::move(futures[i]);
    }
    for (auto s : submitted)  // a node now holds its parts in the scheduler
      if (s >= leaves_)
        for (auto p : job_.plan->nodes[s - leaves_].parts) maybe_release(p);
  }

  const runtime::Frame& combine_name() {
    if (combine_name_.empty()) combine_name_ = runtime::to_frame(job_.combine);
    return combine_name_;
  }

  // Drops our hold on a finished intermediate result once the node consuming it is submitted
  // (on a map task's, finished or not, when map tasks are not tracked).
  void maybe_release(std::size_t s) {
    auto& slot = slots_[s];
    if (!slot.future.valid() || keep(s)) return;
    if (!slot.done && (track_tasks_ || !is_task(s))) return;
    if (consumer_[s] != npos && !slots_[consumer_[s]].submitted) return;
    slot.future = {};
  }

  void observe(std::size_t s) {
    auto& slot = slots_[s];
    const auto status = slot.future.status();
    if (status == KeyStatus::pending) return;
    if (status != KeyStatus::memory) fail(s);
    slot.done = true;
    --remaining_;
    if (is_task(s)) --in_flight_;
    maybe_release(s);
    progress_.update(job_.tasks.size() + nodes_ - remaining_);
  }

  void sweep(std::size_t from) {
    for (std::size_t s = from; s < slots_.size(); ++s)
      if (slots_[s].submitted && !slots_[s].done) observe(s);
  }

  [[noreturn]] void fail(std::size_t s) {
    // Report a failed map task in preference to the reduce node its failure propagated to:
    // the erred map task we track, or the one the scheduler blamed.
    if (!is_task(s)) {
      if (track_tasks_) {
        for (std::size_t t = offset_; t < leaves_; ++t)
          if (slots_[t].submitted && !slots_[t].done &&
              slots_[t].future.status() == KeyStatus::erred)
            fail(t);
      }
    }
    std::string message;
    try {
      slots_[s].future.get();
      message = "the task failed";
    } catch (const TaskError& e) {
      if (!is_task(s) && !track_tasks_)  // the map task the scheduler blamed, if it was one
        for (std::size_t t = offset_; t < leaves_; ++t)
          if (slots_[t].key == e.raised_by()) fail_map_task(t, e.cause());
      message = e.message();
    }
    if (!is_task(s)) throw TaskError(slots_[s].key, message);
    fail_map_task(s, std::move(message));
  }

  [[noreturn]] void fail_map_task(std::size_t s, std::string message) {
    const auto& task = job_.tasks[s - offset_];
    std::size_t input = task.first_input;
    if (job_.chunked) {  // the chunk runner says which input: "map input N: message"
      constexpr std::string_view prefix = "map input ";
      if (message.starts_with(prefix)) {
        const char* p = message.data() + prefix.size();
        const char* end = message.data() + message.size();
        auto [q, ec] = std::from_chars(p, end, input);
        if (ec == std::errc() && end - q >= 2 && q[0] == ':' && q[1] == ' ')
          message.erase(0, static_cast<std::size_t>(q + 2 - message.data()));
        else input = task.first_input;
      }
    }
    throw MapError(slots_[s].key, input, std::move(message));
  }

  Client& client_;
  const Job& job_;
  const ExecuteOptions& options_;
  const std::size_t offset_, leaves_, nodes_;
  std::vector<Slot> slots_;
  std::vector<std::size_t> consumer_;  // the node slot taking each slot as a part
  std::vector<std::size_t> in_call_;   // a slot's task's index in the submit_ready being built
  // Whether execute follows each map task (progress, the max_workers window, the results of a
  // map without reduce, a reduce of one input). Otherwise only the reduce nodes are awaited:
  // the client lets go of each map task as soon as the node consuming it is submitted (in
  // the same message), so the scheduler reports none of their results to it and frees each
  // once combined (docs/measurements.md, "Graph map tasks").
  const bool track_tasks_;
  std::vector<std::int64_t> priority_;
  std::int64_t base_ = 0;
  GraphProgress progress_;
  runtime::Frame combine_name_;
  std::size_t remaining_ = 0;   // tasks not yet seen finished
  std::size_t next_task_ = 0;   // map tasks submitted so far
  std::size_t next_node_ = 0;   // nodes submitted so far
  std::size_t in_flight_ = 0;   // map tasks submitted and not seen finished
};

}  // namespace

std::vector<runtime::Frame> run(Client& client, const Job& job, const ExecuteOptions& options) {
  validate(options);
  const bool no_tasks = job.tasks.empty() && (!job.plan || job.plan->nodes.empty());
  if (no_tasks) {
    if (!job.plan) return {};
    if (job.initial && job.plan->root == 0) return {*job.initial};
    throw std::logic_error("graph: a reduce plan without tasks or an initial value");
  }
  Runner runner(client, job, options);
  return runner.run();
}

void validate(const ExecuteOptions& options) {
  if (options.chunksize < 1)
    throw std::invalid_argument("execute: chunksize must be at least 1 (inputs per map task)");
  if (options.reduce_fuse_levels < 1)
    throw std::invalid_argument("execute: reduce_fuse_levels must be at least 1 (levels of "
                                "combine calls per reduce task; 1: one call per task)");
  if (!(options.exit_after_seconds >= 0))
    throw std::invalid_argument("execute: exit_after_seconds must be >= 0 (0: off)");
}

void arm_exit_watchdog(const ExecuteOptions& options) {
  if (options.exit_after_seconds > 0)
    force_exit_after(options.exit_after_seconds,
                     fmt::format("armed by graph::execute (exit_after_seconds = {}) once its result "
                                 "was safe",
                                 options.exit_after_seconds));
}

}  // namespace detail
}  // namespace taskwire::graph
