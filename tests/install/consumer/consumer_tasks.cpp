#include "consumer_tasks.hpp"

#include <taskwire/runtime/function_registry.hpp>

namespace consumer {
long square(long x) { return x * x; }
long add(long a, long b) { return a + b; }
}  // namespace consumer

TASKWIRE_REGISTER(consumer::square);
TASKWIRE_REGISTER(consumer::add);
