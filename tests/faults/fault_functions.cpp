#include "tests/faults/fault_functions.hpp"

#include <taskwire/runtime/function_registry.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include <unistd.h>

namespace fault_fns {
int inc(int x) { return x + 1; }
int add(int a, int b) { return a + b; }
std::vector<int> inc_block(int x) { return std::vector<int>(4096, x + 1); }
int add_first(const std::vector<int>& block, int b) { return block.front() + b; }
int slow_add(int a, int b) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return a + b;
}
// raise() rather than a null write: the sanitizers turn a null write into an error exit.
int segfault(int x) {
  std::raise(SIGSEGV);
  return x;
}
int abort_task(int x) {
  std::abort();
  return x;
}
int hang(int x) {
  for (int i = 0; i < 600; ++i) std::this_thread::sleep_for(std::chrono::seconds(1));
  return x;
}
int where(int) { return static_cast<int>(::getpid()); }
// A task that takes real time, so that a graph of them outlasts a worker's --lifetime
// (faults: retire): the workload's pace, not an ordering of events.
int paced_inc(int x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return x + 1;
}

// A worker that crashes while it starts (faults_test.sh shutdown-restart): loading this
// library aborts while the file named by TASKWIRE_FAULTS_CRASH_FILE exists.
const bool crash_at_load = [] {
  const char* file = std::getenv("TASKWIRE_FAULTS_CRASH_FILE");
  if (file && *file && ::access(file, F_OK) == 0) std::abort();
  return false;
}();
}  // namespace fault_fns

TASKWIRE_REGISTER(fault_fns::inc);
TASKWIRE_REGISTER(fault_fns::add);
TASKWIRE_REGISTER(fault_fns::inc_block);
TASKWIRE_REGISTER(fault_fns::add_first);
TASKWIRE_REGISTER(fault_fns::slow_add);
TASKWIRE_REGISTER(fault_fns::segfault);
TASKWIRE_REGISTER(fault_fns::abort_task);
TASKWIRE_REGISTER(fault_fns::hang);
TASKWIRE_REGISTER(fault_fns::where);
TASKWIRE_REGISTER(fault_fns::paced_inc);
