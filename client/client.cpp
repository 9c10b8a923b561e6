#include <taskwire/client/client.hpp>
#include <taskwire/runtime/scheduler_file.hpp>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

namespace taskwire {

SchedulerInfo Client::scheduler_info(std::chrono::milliseconds timeout) {
  auto reply = core_->scheduler_info(timeout);
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
    info.workers.push_back(std::move(worker));
  }
  for (auto& u : reply.unrunnable)
    info.unrunnable.push_back({std::move(u.key), std::move(u.needs)});
  return info;
}

std::string Client::pure_key(const protocol::TaskSpec& spec,
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
    if (arg.kind == protocol::ArgSpec::dependency) {
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

Client Client::from_scheduler_file(const std::string& path, ClientOptions options) {
  // As a worker does: the scheduler may be starting at the same time (a batch script).
  auto file = runtime::SchedulerFile::wait_and_read(path, options.connect_timeout);
  return Client(file->address_for("tcp"), std::move(options));
}

}  // namespace taskwire
