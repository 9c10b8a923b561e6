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
}  // namespace fault_fns
