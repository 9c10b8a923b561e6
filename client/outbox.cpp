#include <taskwire/client/outbox.hpp>

#include <utility>

namespace taskwire::client {

void Outbox::seal() {
  sealed_.push_back(Outgoing{current_.take(), std::exchange(carried_, {})});
  frames_ = bytes_ = 0;
}

std::vector<Outbox::Outgoing> Outbox::take() {
  if (!current_.empty()) seal();
  return std::exchange(sealed_, {});
}

}  // namespace taskwire::client
