// Watching keys finish: the completion queues behind as_completed and wait(count), and
// done-callbacks. Each key keeps its watchers and callbacks until its report arrives, so a
// key finishing costs O(watchers of that key), whatever the number of keys watched.
#include <taskwire/client/client_core.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace taskwire::client {

void ClientCore::settled_locked(const std::string& key, KeyState& st) {
  for (auto& weak : st.watchers)
    if (auto c = weak.lock()) c->done.push_back(key);
  st.watchers.clear();
  callbacks_.post(std::exchange(st.callbacks, {}));
}

void ClientCore::watch(const std::shared_ptr<Completions>& c, const std::vector<std::string>& keys) {
  std::lock_guard lock(mu_);
  for (const auto& key : keys) {
    auto it = keys_.find(key);
    if (it == keys_.end() || it->second.status != KeyStatus::pending) {
      c->done.push_back(key);
      continue;
    }
    // Watchers gone (an as_completed or wait that returned) are dropped here, so that
    // repeated waits on the same pending keys do not pile them up.
    auto& watchers = it->second.watchers;
    std::erase_if(watchers, [](const std::weak_ptr<Completions>& w) { return w.expired(); });
    watchers.push_back(c);
  }
  cv_.notify_all();
}

std::string ClientCore::next_completion(Completions& c) {
  std::unique_lock lock(mu_);
  block_until(lock, [&] { return !c.done.empty(); }, std::nullopt);
  std::string key = std::move(c.done.front());
  c.done.pop_front();
  return key;
}

std::size_t ClientCore::wait_completions(Completions& c, std::size_t count, Deadline deadline) {
  std::unique_lock lock(mu_);
  block_until(lock, [&] { return c.done.size() >= count; }, deadline);
  return c.done.size();
}

void ClientCore::on_done(const std::string& key, std::function<void()> callback) {
  auto guarded = [key, callback = std::move(callback)] {
    try {
      callback();
    } catch (const std::exception& e) {
      spdlog::error("client: a done-callback of '{}' threw: {}", key, e.what());
    } catch (...) {
      spdlog::error("client: a done-callback of '{}' threw something not a std::exception", key);
    }
  };
  std::lock_guard lock(mu_);
  auto it = keys_.find(key);
  if (it != keys_.end() && it->second.status == KeyStatus::pending) {
    it->second.callbacks.push_back(std::move(guarded));
    return;
  }
  callbacks_.post({std::move(guarded)});
}

}  // namespace taskwire::client
