#include <taskwire/comm/core/held_handlers.hpp>

#include <algorithm>

namespace taskwire::comm {

asio::execution_context::id HeldHandlers::id;

void HeldHandlers::track(const asio::any_io_executor& executor, std::weak_ptr<Comm> comm) {
  auto& context = asio::query(executor, asio::execution::context);
  asio::use_service<HeldHandlers>(context).add(std::move(comm));
}

void HeldHandlers::add(std::weak_ptr<Comm> comm) {
  std::lock_guard lock(mutex_);
  if (comms_.size() >= prune_at_) {
    comms_.erase(std::remove_if(comms_.begin(), comms_.end(),
                                [](const std::weak_ptr<Comm>& c) { return c.expired(); }),
                 comms_.end());
    prune_at_ = std::max<std::size_t>(64, 2 * comms_.size());
  }
  comms_.push_back(std::move(comm));
}

void HeldHandlers::shutdown() {
  std::vector<std::weak_ptr<Comm>> comms;
  {
    std::lock_guard lock(mutex_);
    comms.swap(comms_);
  }
  // A dropped handler may free other comms (or track one more, which is then simply kept).
  for (auto& weak : comms)
    if (auto comm = weak.lock()) comm->drop_held_handlers();
}

}  // namespace taskwire::comm
