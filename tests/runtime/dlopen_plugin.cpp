// A plugin built against taskwire the documented way (it links taskwire::taskwire), for
// dlopen_taskwire: a host program without jemalloc must be able to load it.
#include <taskwire/runtime/function_registry.hpp>

namespace {
int twice(int x) { return 2 * x; }
}  // namespace

TASKWIRE_REGISTER(twice);
