#pragma once
// The one place that knows the concrete backends. Scheduler, worker, client and benchmarks
// call this and otherwise see only comm/core.
#include <taskwire/comm/core/registry.hpp>

namespace taskwire::comm {

/// Registers tcp://, tls://, inproc:// and mpi:// into `registry`.
void register_builtin_backends(Registry& registry);

}  // namespace taskwire::comm
