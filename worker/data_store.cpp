#include <taskwire/worker/data_store.hpp>

namespace taskwire::worker {

void DataStore::put(const std::string& key, Frame frame) {
  std::lock_guard lock(mu_);
  nbytes_ += frame.size();
  auto [it, inserted] = data_.try_emplace(key, std::move(frame));
  if (!inserted) {
    nbytes_ -= it->second.size();
    it->second = std::move(frame);
  }
}

std::optional<Frame> DataStore::get(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = data_.find(key);
  if (it == data_.end()) return std::nullopt;
  return it->second;
}

bool DataStore::contains(const std::string& key) const {
  std::lock_guard lock(mu_);
  return data_.count(key) != 0;
}

bool DataStore::erase(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = data_.find(key);
  if (it == data_.end()) return false;
  nbytes_ -= it->second.size();
  data_.erase(it);
  return true;
}

DataStore::Lookup DataStore::get_many(const std::vector<std::string>& keys) const {
  Lookup out;
  std::lock_guard lock(mu_);
  for (const auto& key : keys) {
    auto it = data_.find(key);
    if (it == data_.end()) out.missing.push_back(key);
    else out.found.emplace_back(key, it->second);
  }
  return out;
}

std::size_t DataStore::size() const {
  std::lock_guard lock(mu_);
  return data_.size();
}

std::uint64_t DataStore::nbytes() const {
  std::lock_guard lock(mu_);
  return nbytes_;
}

std::vector<std::string> DataStore::keys() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  out.reserve(data_.size());
  for (const auto& [k, v] : data_) out.push_back(k);
  return out;
}

}  // namespace taskwire::worker
