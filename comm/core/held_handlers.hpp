#pragma once
// What a comm's context does, at its shutdown, with the handlers the comm holds.
//
// A comm keeps a pending read's handler (and writes held back) in itself, not in an asio
// operation, so the io_context cannot destroy it when it shuts down, as it destroys its own
// pending operations. A handler that holds the comm's owner (a server's read loop holds the
// server and the peer, which holds the comm) would then keep all of them alive for good, if
// the context stopped before the comm's close or abort ran. So a comm that stores a handler
// is tracked once (HeldHandlers::track), and when its context shuts down (its threads have
// stopped, so nothing else touches the comm's strand-confined state) every tracked comm
// still alive gets drop_held_handlers(): its handlers are destroyed unrun, as asio's are.
#include <taskwire/comm/core/comm.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace taskwire::comm {

class HeldHandlers final : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;
  explicit HeldHandlers(asio::execution_context& context) : service(context) {}

  /// Remembers `comm` for the shutdown of the context of `executor` (the comm's own).
  static void track(const asio::any_io_executor& executor, std::weak_ptr<Comm> comm);
  /// track() the first time only: `tracked` is the comm's own flag, read on its strand
  /// (a branch per operation, no reference count touched once tracked).
  template <class C>
  static void track_once(C& comm, bool& tracked) {
    if (tracked) return;
    tracked = true;
    track(comm.executor(), comm.weak_from_this());
  }

 private:
  void shutdown() override;
  void add(std::weak_ptr<Comm> comm);

  std::mutex mutex_;
  std::vector<std::weak_ptr<Comm>> comms_;
  std::size_t prune_at_ = 64;  // drop the expired entries when the list reaches this size
};

}  // namespace taskwire::comm
