#include <taskwire/client/client.hpp>
#include <taskwire/runtime/scheduler_file.hpp>

#include <algorithm>

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
    info.workers.push_back(std::move(worker));
  }
  return info;
}

Client Client::from_scheduler_file(const std::string& path, ClientOptions options) {
  // As a worker does: the scheduler may be starting at the same time (a batch script).
  auto file = runtime::SchedulerFile::wait_and_read(path, options.connect_timeout);
  return Client(file->address_for("tcp"), std::move(options));
}

}  // namespace taskwire
