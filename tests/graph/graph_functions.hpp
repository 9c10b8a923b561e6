#pragma once
// Functions the graph tests run in their in-process clusters (registered in graph_functions.cpp).
#include <atomic>
#include <string>
#include <vector>

namespace graph_fns {

int square(int x);
long sum(std::vector<long> v);
long widen_square(int x);
/// "x," : with concat, an associative but not commutative combine, so order shows.
std::string tag(int x);
std::string concat(std::vector<std::string> parts);
std::string join_with(const std::vector<std::string>& parts, const std::string& separator);
int fail_on_13(int x);  ///< throws "bad input 13" for 13
int fail_first(int x);  ///< throws "first call for x" the first time it sees x, then returns x
std::string tag_or_fail(int x);  ///< tag(x), but throws "bad input 13" for 13
int unregistered(int x);         ///< not registered on purpose
std::string refuse(std::vector<std::string> parts);  ///< always throws "combine refused"
/// Counts how many run at once (see max_concurrent); sleeps 2 ms.
int gauge(int x);
/// 0 waits until `others_needed` other calls have finished (at most 30 s); returns 1 if they
/// did. Any other input counts itself finished and returns 1.
int uneven(int x);

extern std::atomic<int> max_concurrent;
extern std::atomic<int> others_finished;
extern std::atomic<int> others_needed;
/// Thread ids (hashed) that ran concat since the last reset.
std::vector<std::size_t> concat_threads();
void reset_concat_threads();

}  // namespace graph_fns
