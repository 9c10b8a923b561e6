#include <taskwire/worker/served_comms.hpp>

namespace taskwire::worker {

bool ServedComms::add(const comm::CommPtr& comm) {
  std::lock_guard lock(mu_);
  if (stopped_) return false;
  comms_.insert(comm);
  return true;
}

void ServedComms::remove(const comm::CommPtr& comm) {
  std::lock_guard lock(mu_);
  comms_.erase(comm);
}

void ServedComms::close_all() {
  std::set<comm::CommPtr> comms;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    comms.swap(comms_);
  }
  for (const auto& c : comms) c->close();  // graceful: replies already queued still go
}

}  // namespace taskwire::worker
