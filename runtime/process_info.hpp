#pragma once
// What a worker tells the scheduler about its process: its host and the memory it holds, as
// the operating system counts it (Linux /proc).
#include <cstdint>
#include <string>

namespace taskwire::runtime {

/// Resident set size of this process in bytes (/proc/self/statm); 0 when it cannot be read.
/// Reads a small file: cheap enough for a heartbeat, not for a hot loop.
std::uint64_t resident_set_bytes() noexcept;

/// Peak resident set size of this process in bytes (VmHWM in /proc/self/status); 0 when it
/// cannot be read.
std::uint64_t peak_resident_set_bytes() noexcept;

/// What a worker's memory limit compares (memory_monitor.cpp): the resident set size less the
/// freed pages the allocator keeps for reuse (jemalloc's dirty pages; taskwire's jemalloc
/// options never give them back on their own, so the resident set size stays near its peak
/// after data is freed). Non-malloc memory (stacks, mappings, MPI's buffers) still counts.
/// 0 when the resident set size cannot be read. Cheap enough for a ten-a-second monitor.
std::uint64_t process_memory_bytes() noexcept;

/// Whether jemalloc (linked, as taskwire's programs link it, or preloaded) serves this
/// process's malloc. It keeps freed pages for any allocation, so large frames are not kept
/// apart for reuse (frame.cpp) as they are under glibc, which gives a thread's large blocks
/// fresh pages each time, or a sanitizer's allocator.
bool jemalloc_serves_malloc() noexcept;

/// Gives the memory the allocator and the frame buffer cache keep for reuse back to the
/// operating system (jemalloc: purges every arena; glibc: malloc_trim), so that freeing
/// data lowers the resident set size at once. Costs a few milliseconds: for a process near
/// its memory limit, not for a hot loop.
void release_free_memory() noexcept;

/// This machine's host name (gethostname); empty when it cannot be read.
std::string host_name();

/// "SIGSEGV (Segmentation fault)", for any signal number ("signal 77" when it has no name).
std::string describe_signal(int signo);

}  // namespace taskwire::runtime
