#pragma once
// inproc:// : comms between components of one process, through in-memory queues. Messages
// are moved, frames shared, nothing copied. The namespace of inproc names is process-wide
// (the address space is the process): a listener at inproc://NAME is reachable from every
// Context and Registry of the process. inproc://auto picks a unique name.
#include <taskwire/comm/core/backend.hpp>
#include <taskwire/runtime/context.hpp>

namespace taskwire::comm::inproc {

class InprocBackend final : public Backend {
 public:
  explicit InprocBackend(runtime::Context& context) : context_(context) {}
  std::string_view scheme() const noexcept override { return "inproc"; }
  std::unique_ptr<Connector> make_connector() override;
  std::unique_ptr<Listener> make_listener(const Address& address,
                                          RawAcceptHandler on_comm,
                                          const RawListenOptions& options) override;

 private:
  runtime::Context& context_;
};

}  // namespace taskwire::comm::inproc
