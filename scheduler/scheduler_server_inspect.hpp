#pragma once
// Template body of SchedulerServer::inspect (needs the Impl's strand and state).
#include <taskwire/scheduler/scheduler_server.hpp>

namespace taskwire::scheduler {

namespace detail {
asio::any_io_executor server_strand(const void* impl);
const SchedulerState& server_state(const void* impl);
}  // namespace detail

template <class F>
auto SchedulerServer::inspect(F fn) -> decltype(fn(std::declval<const SchedulerState&>())) {
  using R = decltype(fn(std::declval<const SchedulerState&>()));
  // Shared with the handler: the task may still be finishing when get() returns.
  auto task = std::make_shared<std::packaged_task<R()>>(
      [&fn, impl = impl_.get()] { return fn(detail::server_state(impl)); });
  auto fut = task->get_future();
  asio::post(detail::server_strand(impl_.get()), [task] { (*task)(); });
  return fut.get();
}

}  // namespace taskwire::scheduler
