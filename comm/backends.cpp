#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/inproc/inproc_backend.hpp>

namespace taskwire::comm {

void register_builtin_backends(Registry& registry) {
  registry.add(std::make_unique<inproc::InprocBackend>(registry.context()));
}

}  // namespace taskwire::comm
