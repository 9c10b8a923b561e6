#include <taskwire/client/client.hpp>
#include <taskwire/client/client_core.hpp>
#include <taskwire/runtime/scheduler_file.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <map>
#include <unordered_set>
#include <memory>
#include <stdexcept>

namespace taskwire {

std::size_t client::detail::map_length(std::initializer_list<std::optional<std::size_t>> sizes) {
  std::optional<std::size_t> n;
  bool differ = false;
  for (const auto& size : sizes) {
    if (!size) continue;
    if (n && *n != *size) differ = true;
    if (!n) n = size;
  }
  if (differ) {
    std::vector<std::string> listed;
    for (const auto& size : sizes) listed.push_back(size ? std::to_string(*size) : "fixed");
    throw std::invalid_argument(fmt::format(
        "map: the input sequences must all have one length, got lengths ({})",
        fmt::join(listed, ", ")));
  }
  return n.value_or(0);
}

SchedulerInfo Client::scheduler_info(std::chrono::milliseconds timeout) {
  auto reply = core().scheduler_info(timeout);
  SchedulerInfo info;
  info.address = std::move(reply.address);
  info.addresses = std::move(reply.addresses);
  info.clients = reply.clients;
  for (auto& [state, count] : reply.tasks_by_state) info.tasks_by_state[state] = count;
  info.workers.reserve(reply.workers.size());
  for (auto& w : reply.workers) {
    WorkerInfo worker;
    worker.address = std::move(w.address);
    worker.other_addresses = std::move(w.other_addresses);
    worker.name = std::move(w.name);
    worker.host = std::move(w.host);
    worker.nthreads = w.nthreads;
    worker.memory = w.memory_rss;
    worker.processing = w.processing;
    // The worker's count is as of its last heartbeat, the scheduler's is current: a task
    // that finished since is no longer processing, and so not running either.
    worker.running = std::min<std::size_t>(w.executing, w.processing);
    worker.queued = worker.processing - worker.running;
    worker.keys_held = w.keys_held;
    worker.bytes_held = w.bytes_held;
    worker.since_heartbeat_seconds = w.since_heartbeat_s;
    worker.resources = std::move(w.resources);
    worker.used_resources = std::move(w.used_resources);
    worker.paused = w.paused;
    worker.retiring = w.retiring;
    info.workers.push_back(std::move(worker));
  }
  for (auto& u : reply.unrunnable)
    info.unrunnable.push_back({std::move(u.key), std::move(u.needs)});
  return info;
}

RetireError::RetireError(std::vector<std::string> retired, std::vector<Failure> failures)
    : std::runtime_error([&] {
        std::vector<std::string> each;
        for (const auto& f : failures) each.push_back(fmt::format("{}: {}", f.worker, f.reason));
        return fmt::format("retire_workers: {} worker(s) not retired ({}); {} retired",
                           failures.size(), fmt::join(each, "; "), retired.size());
      }()),
      retired_(std::move(retired)),
      failures_(std::move(failures)) {}

namespace {
std::vector<std::string> retired_or_throw(protocol::RetireWorkersReply reply) {
  if (reply.failed.empty()) return std::move(reply.retired);
  std::vector<RetireError::Failure> failures;
  for (auto& f : reply.failed) failures.push_back({std::move(f.worker), std::move(f.reason)});
  throw RetireError(std::move(reply.retired), std::move(failures));
}
}  // namespace

std::vector<std::string> Client::retire_workers(const std::vector<std::string>& workers,
                                                std::optional<std::chrono::milliseconds> timeout) {
  return retired_or_throw(core().retire_workers(workers, 0, timeout));
}

std::vector<std::string> Client::retire_workers(std::size_t count,
                                                std::optional<std::chrono::milliseconds> timeout) {
  return retired_or_throw(core().retire_workers({}, count, timeout));
}

RebalanceResult Client::rebalance(const std::vector<std::string>& keys,
                                  const std::vector<std::string>& workers,
                                  std::optional<std::chrono::milliseconds> timeout) {
  auto reply = core().rebalance(keys, workers, timeout);
  return {static_cast<std::size_t>(reply.moved), reply.moved_bytes, std::move(reply.failed)};
}

std::string Client::item_key(const client::detail::TaskDraft& spec,
                             const std::vector<runtime::Frame>& frames) {
  const auto key = pure_key(spec, frames);  // "<function>-<hash>"
  return "getitem" + key.substr(key.rfind('-'));
}

std::string Client::pure_key(const client::detail::TaskDraft& spec,
                             const std::vector<runtime::Frame>& frames) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("pure key: cannot start a SHA-256 digest");
  // Each part with its length first, so that no two argument lists hash the same bytes.
  auto add = [&](std::uint8_t kind, const void* data, std::size_t size) {
    const std::uint64_t length = size;
    EVP_DigestUpdate(ctx.get(), &kind, 1);
    EVP_DigestUpdate(ctx.get(), &length, sizeof length);
    EVP_DigestUpdate(ctx.get(), data, size);
  };
  add(0, spec.function.data(), spec.function.size());
  for (const auto& arg : spec.args) {
    if (arg.kind == client::detail::TaskArg::dependency) {
      add(1, arg.key.data(), arg.key.size());
    } else {
      const auto& frame = frames.at(arg.frame_index);
      add(2, frame.data(), frame.size());
    }
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest.data(), &size) != 1 || size < 16)
    throw std::runtime_error("pure key: the SHA-256 digest failed");
  std::string hex;
  for (unsigned int i = 0; i < 16; ++i) hex += fmt::format("{:02x}", digest[i]);
  return spec.function + "-" + hex;
}

void Client::use_list_form(client::detail::TaskDraft& spec, std::vector<runtime::Frame>& frames,
                           const std::vector<std::int64_t>& layout) {
  spec.function = runtime::list_form_name(spec.function);
  spec.args.insert(spec.args.begin(), {client::detail::TaskArg::frame,
                                       static_cast<std::uint32_t>(frames.size()), {}});
  frames.push_back(runtime::to_frame(layout));
  // A future listed twice is one dependency (its result is still passed twice).
  std::unordered_set<std::string> seen;
  std::erase_if(spec.dependencies,
                [&seen](const std::string& k) { return !seen.insert(k).second; });
}

namespace {
// The frames of one submit_tasks call, each distinct buffer sent once.
class FrameTable {
 public:
  std::uint32_t index_of(const runtime::Frame& frame) {
    auto [it, added] = at_.try_emplace({frame.data(), frame.size()},
                                       static_cast<std::uint32_t>(frames_.size()));
    if (added) frames_.push_back(frame);
    return it->second;
  }
  const std::vector<runtime::Frame>& all() const noexcept { return frames_; }
  std::vector<runtime::Frame> take() { return std::move(frames_); }

 private:
  std::vector<runtime::Frame> frames_;
  std::map<std::pair<const char*, std::size_t>, std::uint32_t> at_;
};

// The key a future or Result argument stands for; `earlier` holds the call's tasks so far.
const std::string& dependency_key(const TaskDescription::Argument& arg,
                                  const std::vector<client::detail::TaskDraft>& earlier) {
  if (const auto* future = std::get_if<Future<runtime::Frame>>(&arg)) return future->key();
  const auto index = std::get<TaskDescription::Result>(arg).task;
  if (index >= earlier.size())
    throw std::invalid_argument("submit_tasks: a Result argument names task " +
                                std::to_string(index) + ", not an earlier task of the call");
  return earlier[index].key;
}
}  // namespace

std::vector<Future<runtime::Frame>> Client::submit_tasks(std::vector<TaskDescription> tasks) {
  FrameTable frames;
  std::vector<client::detail::TaskDraft> specs;
  specs.reserve(tasks.size());
  for (auto& task : tasks) {
    client::detail::TaskDraft spec;
    spec.function = std::move(task.function);
    spec.key = new_key(task.key_prefix.empty() ? spec.function : task.key_prefix);
    spec.priority = task.order ? *task.order : next_order();
    spec.args.reserve(task.args.size());
    for (const auto& arg : task.args) {
      if (const auto* frame = std::get_if<runtime::Frame>(&arg)) {
        spec.args.push_back({client::detail::TaskArg::frame, frames.index_of(*frame), {}});
      } else {
        const auto& key = dependency_key(arg, specs);
        spec.args.push_back({client::detail::TaskArg::dependency, 0, key});
        spec.dependencies.push_back(key);
      }
    }
    apply(task.options, task.options.key, spec, frames.all());  // before a Result names it
    specs.push_back(std::move(spec));
  }
  auto handles = submit_drafts(std::move(specs), frames.take());
  std::vector<Future<runtime::Frame>> out;
  out.reserve(handles.size());
  for (auto& handle : handles) out.push_back(Future<runtime::Frame>(std::move(handle)));
  return out;
}

Client::Client(const std::string& address, ClientOptions options)
    : core_(client::ClientCore::connect(address, std::move(options))) {}

Client::Client(comm::Registry& registry, const std::string& address, const ClientOptions& options)
    : core_(client::ClientCore::connect(registry, address, options)) {}

client::ClientCore& Client::core() const {
  if (!core_) throw std::logic_error("taskwire::Client: used after it was moved from");
  return *core_;
}

std::int64_t Client::next_order() { return core().next_priority(); }

void Client::shutdown() { core().shutdown(); }

std::string Client::new_key(const std::string& function) { return core().new_key(function); }

namespace {
protocol::TaskSpec to_wire(client::detail::TaskDraft&& draft) {
  protocol::TaskSpec spec;
  spec.key = std::move(draft.key);
  spec.function = std::move(draft.function);
  spec.args.reserve(draft.args.size());
  for (auto& arg : draft.args) {
    const auto kind = arg.kind == client::detail::TaskArg::dependency
                          ? protocol::ArgSpec::dependency
                          : protocol::ArgSpec::frame;
    spec.args.push_back({kind, arg.frame_index, std::move(arg.key)});
  }
  spec.dependencies = std::move(draft.dependencies);
  spec.priority = draft.priority;
  spec.retries = draft.options.retries;
  spec.user_priority = draft.options.priority;
  spec.resources = std::move(draft.options.resources);
  spec.workers = std::move(draft.options.workers);
  spec.allow_other_workers = draft.options.allow_other_workers;
  return spec;
}

std::vector<client::detail::KeyHandle> to_handles(std::vector<std::shared_ptr<client::KeyRef>> refs) {
  std::vector<client::detail::KeyHandle> out;
  out.reserve(refs.size());
  for (auto& ref : refs) out.emplace_back(std::move(ref));
  return out;
}
}  // namespace

std::vector<client::detail::KeyHandle> Client::submit_drafts(
    std::vector<client::detail::TaskDraft> tasks, std::vector<runtime::Frame> frames) {
  std::vector<protocol::TaskSpec> specs;
  specs.reserve(tasks.size());
  for (auto& task : tasks) specs.push_back(to_wire(std::move(task)));
  return to_handles(core().submit(std::move(specs), std::move(frames)));
}

std::vector<runtime::Frame> Client::results(const std::vector<std::string>& keys) {
  return core().results(keys);
}

std::vector<client::detail::KeyHandle> Client::scatter_frames(
    std::vector<runtime::Frame> frames, const std::vector<std::string>& workers, bool broadcast) {
  return to_handles(core().scatter(std::move(frames), workers, broadcast));
}

std::vector<bool> Client::wait_keys(const std::vector<std::string>& keys, std::size_t count,
                                    std::optional<std::chrono::milliseconds> timeout) {
  auto& core = this->core();
  auto completions = std::make_shared<client::Completions>();
  core.watch(completions, keys);
  client::ClientCore::Deadline deadline;
  if (timeout) deadline = std::chrono::steady_clock::now() + *timeout;
  core.wait_completions(*completions, std::min(count, keys.size()), deadline);
  const auto statuses = core.statuses(keys);
  std::vector<bool> done;
  done.reserve(statuses.size());
  for (auto status : statuses) done.push_back(status != client::KeyStatus::pending);
  return done;
}

std::size_t Client::wait_any(const std::vector<std::string>& keys) { return core().wait_any(keys); }

void Client::cancel_keys(const std::vector<std::string>& keys, bool force) {
  core().cancel(keys, force);
}

client::detail::CompletionQueue Client::completion_queue() {
  (void)core();  // a moved-from client throws here
  return client::detail::CompletionQueue(core_);
}

Client Client::from_scheduler_file(const std::string& path, ClientOptions options) {
  // As a worker does: the scheduler may be starting at the same time (a batch script).
  auto file = runtime::SchedulerFile::wait_and_read(path, options.connect_timeout);
  return Client(file->address_for("tcp"), std::move(options));
}

}  // namespace taskwire
