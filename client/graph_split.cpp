#include <taskwire/client/graph_split.hpp>

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>

namespace taskwire::client {

namespace {

constexpr std::uint32_t kNotLocal = std::numeric_limits<std::uint32_t>::max();

bool fits_in_one(const std::vector<protocol::TaskSpec>& tasks,
                 const std::vector<runtime::Frame>& frames, const GraphSplitOptions& options) {
  if (tasks.size() > options.max_tasks || frames.size() > options.max_frames) return false;
  std::uint64_t bytes = 0;
  for (const auto& f : frames) bytes += f.size();
  return bytes <= options.max_bytes;
}

// Dependencies first (depth-first, iterative: a chain of a million tasks must not overflow
// the stack), otherwise submission order.
std::vector<std::size_t> dependencies_first(const std::vector<protocol::TaskSpec>& tasks) {
  std::unordered_map<std::string_view, std::size_t> index;
  index.reserve(tasks.size());
  for (std::size_t i = 0; i < tasks.size(); ++i) index.emplace(tasks[i].key, i);
  enum class Mark : std::uint8_t { unseen, active, placed };
  std::vector<Mark> marks(tasks.size(), Mark::unseen);
  std::vector<std::size_t> order;
  order.reserve(tasks.size());
  struct Visit {
    std::size_t task;
    std::size_t next_dependency = 0;
  };
  std::vector<Visit> stack;
  for (std::size_t root = 0; root < tasks.size(); ++root) {
    if (marks[root] != Mark::unseen) continue;
    marks[root] = Mark::active;
    stack.push_back({root});
    while (!stack.empty()) {
      Visit& v = stack.back();
      const auto& deps = tasks[v.task].dependencies;
      if (v.next_dependency < deps.size()) {
        auto it = index.find(deps[v.next_dependency++]);
        if (it != index.end() && marks[it->second] == Mark::unseen) {  // active: a cycle
          marks[it->second] = Mark::active;
          stack.push_back({it->second});
        }
        continue;
      }
      marks[v.task] = Mark::placed;
      order.push_back(v.task);
      stack.pop_back();
    }
  }
  return order;
}

// Fills parts in order, starting the next one when a task would take this one past a limit.
class PartBuilder {
 public:
  PartBuilder(std::vector<runtime::Frame>& frames, const GraphSplitOptions& options)
      : frames_(frames), options_(options), local_(frames.size(), kNotLocal) {}

  void add(protocol::TaskSpec task) {
    std::uint64_t new_frames = 0, new_bytes = 0;
    for (const auto& a : task.args)
      if (a.kind == protocol::ArgSpec::frame && a.frame_index < frames_.size() &&
          local_[a.frame_index] == kNotLocal) {
        ++new_frames;  // a frame two args share counts twice here: an upper bound
        new_bytes += frames_[a.frame_index].size();
      }
    if (!parts_.empty() && part_tasks_ > 0 &&
        (part_tasks_ + 1 > options_.max_tasks || part_frames_ + new_frames > options_.max_frames ||
         part_bytes_ + new_bytes > options_.max_bytes))
      close_part();
    if (parts_.empty()) parts_.emplace_back();
    GraphPart& part = parts_.back();
    for (auto& a : task.args) {
      if (a.kind != protocol::ArgSpec::frame) continue;
      if (a.frame_index >= frames_.size()) {  // stays out of range: the scheduler refuses it
        a.frame_index = kNotLocal;
        continue;
      }
      std::uint32_t& local = local_[a.frame_index];
      if (local == kNotLocal) {
        local = static_cast<std::uint32_t>(part.frames.size());
        part.frames.push_back(frames_[a.frame_index]);  // shared, not copied
        touched_.push_back(a.frame_index);
        part_bytes_ += frames_[a.frame_index].size();
      }
      a.frame_index = local;
    }
    part_frames_ = part.frames.size();
    ++part_tasks_;
    part.graph.wanted.push_back(task.key);
    part.graph.tasks.push_back(std::move(task));
  }

  std::vector<GraphPart> take() { return std::move(parts_); }

 private:
  void close_part() {
    for (auto i : touched_) local_[i] = kNotLocal;
    touched_.clear();
    part_tasks_ = 0;
    part_frames_ = part_bytes_ = 0;
    parts_.emplace_back();
  }

  std::vector<runtime::Frame>& frames_;
  const GraphSplitOptions& options_;
  std::vector<std::uint32_t> local_;  // submission frame -> its index in the current part
  std::vector<std::uint32_t> touched_;
  std::vector<GraphPart> parts_;
  std::size_t part_tasks_ = 0;
  std::uint64_t part_frames_ = 0, part_bytes_ = 0;
};

}  // namespace

GraphSplitOptions GraphSplitOptions::within(const runtime::Limits& limits) {
  // Room for the header frame and the few frameless operations (releases, cancels) that may
  // share the message; half the byte limit leaves room for the header's task specs.
  constexpr std::uint64_t kSpareFrames = 64;
  GraphSplitOptions o;
  o.max_frames = limits.max_frames > 2 * kSpareFrames ? limits.max_frames - kSpareFrames : 1;
  o.max_bytes = std::max<std::uint64_t>(1, std::min(limits.max_message_bytes / 2,
                                                    limits.max_frame_bytes));
  return o;
}

std::vector<GraphPart> split_graph(std::vector<protocol::TaskSpec> tasks,
                                   std::vector<runtime::Frame> frames,
                                   const GraphSplitOptions& options) {
  if (fits_in_one(tasks, frames, options)) {
    std::vector<GraphPart> one(1);
    one[0].graph.wanted.reserve(tasks.size());
    for (const auto& t : tasks) one[0].graph.wanted.push_back(t.key);
    one[0].graph.tasks = std::move(tasks);
    one[0].frames = std::move(frames);
    return one;
  }
  PartBuilder builder(frames, options);
  for (auto i : dependencies_first(tasks)) builder.add(std::move(tasks[i]));
  return builder.take();
}

}  // namespace taskwire::client
