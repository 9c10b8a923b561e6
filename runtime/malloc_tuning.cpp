// Allocation policy for a process that moves large frames: glibc gives every allocation above
// its mmap threshold fresh pages (mmap, then a page fault per 4 KiB page, then munmap on
// free) and trims freed heap memory back to the kernel. Frames of a few MiB to a few hundred
// MiB are allocated and freed all the time here (serialisation, receive buffers, results), so
// each one paid its page faults again: on this project's VMs a fault costs microseconds, and
// the blocked-array benchmark (taskwire-bench array, 32 MiB blocks) spent most of its time in
// them: 18.1 s over TCP before, 4.8 s after (mpiexec.mpich -n 5, N 8000, 4 x 4 blocks).
// So, once at load time: the largest mmap threshold glibc accepts (32 MiB), no trimming, and
// a generous top pad, keeping freed memory in the process for reuse.
// Skipped when the user set any MALLOC_*_ variable or TASKWIRE_MALLOC_TUNING=0.
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace taskwire::runtime {
namespace {

bool user_chose_policy() {
  if (const char* v = std::getenv("TASKWIRE_MALLOC_TUNING"); v && std::strcmp(v, "0") == 0) return true;
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                           "GLIBC_TUNABLES"})
    if (std::getenv(name)) return true;
  return false;
}

const bool tuned = [] {
  if (user_chose_policy()) return false;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 256 << 20);
  return true;
}();

}  // namespace
}  // namespace taskwire::runtime
