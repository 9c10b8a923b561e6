#pragma once
// A worker's memory limit and what it does as its process nears it, after Dask's worker
// memory management (distributed.worker.memory.*): past `target` of the limit in results
// held, the least recently used go to disk; past `spill` of it in process memory (its RSS
// less the freed pages the allocator keeps: runtime::process_memory_bytes), more go; past
// `pause`, the worker starts no task and fetches nothing until it is below again; past
// `terminate`, a worker under its nanny is restarted (without one, it closes).
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace taskwire::worker {

struct MemoryOptions {
  /// Bytes this worker's process may use; 0: no limit (nothing below applies).
  std::uint64_t limit = 0;
  /// Fractions of `limit`; 0 turns that step off. Dask's defaults.
  double target = 0.6;     ///< results held in memory: spill the least recently used
  double spill = 0.7;      ///< process memory (process_memory_bytes): spill below `target`
  double pause = 0.8;      ///< process memory: start no task, fetch nothing
  double terminate = 0.95; ///< process memory: restart (under a nanny) or close
  /// Where spilled results go: the worker makes a fresh directory inside it and removes it
  /// when it ends. Empty: the system's temporary directory ($TMPDIR or /tmp).
  std::string local_directory;
  /// How often the worker compares its process memory with the thresholds (Dask: 100 ms).
  std::chrono::milliseconds monitor_interval{100};
};

/// The exit status of a worker past its terminate threshold under a nanny: the nanny
/// restarts it, as it does a worker killed by a signal.
inline constexpr int kExitMemoryLimit = 3;
/// The exit status of a worker that lost its scheduler and could not stop in time to join it
/// again in the same process (a task that never returns): the nanny starts a fresh one.
inline constexpr int kExitRejoin = 4;

/// Memory this machine gives its processes: physical memory, or less if a cgroup (v2
/// memory.max, v1 memory.limit_in_bytes) or RLIMIT_RSS says so.
std::uint64_t system_memory_bytes();

/// Dask's memory_limit "auto": the machine's memory shared among its workers in proportion
/// to their threads, system memory * min(1, nthreads / cores).
std::uint64_t auto_memory_limit(unsigned nthreads);

/// Parses a memory limit as dask-worker --memory-limit does: "auto"; "0" or "none" (no
/// limit); a fraction of system_memory_bytes() ("0.5", at most 1); or bytes with an
/// optional unit ("4e9", "4GB", "4GiB", "512 MiB"; kB/MB/GB/TB are powers of 1000, KiB/MiB/
/// GiB/TiB of 1024). Throws std::invalid_argument naming `what` for anything else.
std::uint64_t parse_memory_limit(std::string_view text, unsigned nthreads,
                                 std::string_view what = "memory limit");

/// Checks the fractions (each 0 or in (0, 1], non-decreasing among those set); throws
/// std::invalid_argument saying which is wrong.
void check_memory_fractions(const MemoryOptions& options);

/// "1.5 GiB"-style text for logs.
std::string format_bytes(std::uint64_t bytes);

}  // namespace taskwire::worker
