#pragma once
// Task functions that misbehave, for the fault tests: they crash their process, hang, or are
// slow enough that a worker dies while running them.
#include <vector>

namespace fault_fns {
int inc(int x);
int add(int a, int b);
int slow_add(int a, int b);  ///< a + b after 1 ms: long enough for a kill to land mid-task
int segfault(int x);         ///< dies of SIGSEGV
int abort_task(int x);       ///< calls std::abort()
int hang(int x);             ///< sleeps (up to 10 minutes), never returns in a test's time
int where(int x);            ///< the process id of the worker that ran it
int paced_inc(int x);        ///< x + 1 after 10 ms: a graph that lasts a few seconds
/// 4096 copies of x + 1: a result too big to ride inline with a consumer's task, so that a
/// consumer on another worker fetches it from its holder.
std::vector<int> inc_block(int x);
int add_first(const std::vector<int>& block, int b);  ///< block.front() + b
}  // namespace fault_fns
