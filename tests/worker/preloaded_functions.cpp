// A library the daemon test loads into taskwire-worker with --preload: its functions are
// known to the worker only through it.
#include <taskwire/runtime/function_registry.hpp>

#include <stdexcept>

namespace {
long preloaded_square(long x) { return x * x; }
long preloaded_throw(long) { throw std::domain_error("preloaded_throw: no such luck"); }
TASKWIRE_REGISTER(preloaded_square);
TASKWIRE_REGISTER(preloaded_throw);
}  // namespace
