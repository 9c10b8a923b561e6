#pragma once
// Functions the cluster tests run (registered in cluster_functions.cpp, which is linked into
// the test binary and built as the --preload library for the daemon tests).
#include <string>
#include <vector>

namespace cluster_fns {
int inc(int x);
int add(int a, int b);
long sum(std::vector<int> xs);
long dot(const std::vector<int>& xs, std::vector<int> ys);  ///< sum of xs[i] * ys[i]
int fail_on(int x);  ///< throws std::runtime_error("bad input 13") for 13
int throw_int(int x);  ///< throws x itself: an exception not derived from std::exception
std::string greet(std::string who);
int slow_inc(int x);  ///< sleeps 50 ms
int noop(int x);
std::string blob(int kib, int seed);  ///< kib KiB of the letter 'a' + seed % 26
std::string concat(std::string a, std::string b);
/// Counts its calls per tag (in this process); throws std::runtime_error while the count is
/// at most `failures`, then returns the count.
int flaky(std::string tag, int failures);
int calls_of(const std::string& tag);  ///< flaky's count for `tag` (not registered)
/// Blocks until open_gate(gate) (at most two minutes, so a failing test still ends), then
/// returns 1 if the gate was opened, 0 if it timed out.
int hold(std::string gate);
/// hold(gate), then returns x.
int gated(std::string gate, int x);
void open_gate(const std::string& gate);     ///< (not registered) opens it for good
/// Waits (at most a minute) until a hold(gate) has started; false if none did.
bool entered(const std::string& gate);
/// Appends `tag` to the run log (in this process) and returns x.
int record(std::string tag, int x);
std::vector<std::string> run_log();
/// Counts the calls with `tag` running at once (in this process) while it holds its thread
/// for 20 ms, so that overlapping calls do overlap; returns x.
int exclusive(std::string tag, int x);
int max_overlap(const std::string& tag);  ///< exclusive's most calls of `tag` at once  ///< record's tags in the order the calls began
}  // namespace cluster_fns
