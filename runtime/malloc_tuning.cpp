// Allocation policy for a process that moves large frames.
//
// On the VMs this project runs on, a fresh 4 KiB page costs far more to fault in than the same
// memory in transparent huge pages (docs/measurements.md, "jemalloc and the allocator
// tuning"). glibc gives every allocation above its mmap threshold fresh pages, and the kernel
// here backs anonymous memory with huge pages only where madvise(MADV_HUGEPAGE) asked for them
// (/sys/kernel/mm/transparent_hugepage/enabled = madvise, the common default), while frames of
// a few MiB to hundreds of MiB, and the user's own vectors that become them, are allocated all
// the time.
//
// glibc reads its huge-page tunable only at start-up, from GLIBC_TUNABLES, so the library
// cannot set it for the process it is loaded into; with the system allocator, whoever starts
// the process sets `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (docs/guide/building.md,
// "Memory"). What can be set later is set when the library loads, unless the user chose a
// policy: freed memory stays in the process (large blocks come from the heap, not from mmap;
// no trimming below 1 GiB free, a 256 MiB top pad), so a process's footprint stays near its
// peak. The same idea as Dask's nanny, which sets MALLOC_TRIM_THRESHOLD_ before it starts a
// worker. TASKWIRE_MALLOC_TUNING=0 turns it off; any MALLOC_*_ variable keeps glibc's defaults.
//
// Built with jemalloc (TASKWIRE_ALLOCATOR=jemalloc, the default) none of the above applies:
// every taskwire program links jemalloc ahead of libc, and the options below (read by jemalloc
// before its first allocation; MALLOC_CONF still overrides them) give it the same policy:
// huge pages for its mappings, and large blocks kept in the ordinary arenas (by default those
// above 8 MiB go to an arena that returns them to the kernel as soon as they are freed).
// Why jemalloc, and why these options: docs/measurements.md, same section.
// One arena, whose freed pages are never purged on a timer (narenas:1, dirty_decay_ms:-1):
// a page touched for the first time costs ~4 ms per MB on the VMs measured, about thirty
// times a page used before; with an arena per thread and a 10 s decay, a new cluster's
// threads, and every cluster after 10 s, faulted their memory in again (docs/measurements.md,
// "The first cluster in a process"). The worker's memory limits therefore subtract the
// pages kept this way (process_memory_bytes); release_free_memory still purges them. An
// option the user's MALLOC_CONF names wins (jemalloc reads it after this string).
#include <dlfcn.h>
#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include <taskwire/runtime/large_buffer.hpp>
#include <taskwire/runtime/process_info.hpp>

#ifdef TASKWIRE_WITH_JEMALLOC
extern "C" {
// jemalloc's documented hook: the process's first definition of this symbol is its option string.
__attribute__((visibility("default"))) const char* malloc_conf =
    "thp:always,oversize_threshold:0,narenas:1,dirty_decay_ms:-1";
}
#endif

namespace taskwire::runtime {
namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

bool user_chose_malloc_options() {
  for (const char* name :
       {"MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"})
    if (std::getenv(name)) return true;
  return false;
}

// Another allocator (jemalloc, linked or preloaded; tcmalloc...) serves malloc: glibc's
// malloc, and its tunables, are unused.
bool malloc_is_not_glibcs() {
  void* libc = ::dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (!libc) return false;
  const bool other = ::dlsym(RTLD_DEFAULT, "malloc") != ::dlsym(libc, "malloc");
  ::dlclose(libc);
  return other;
}

const bool tuned = [] {
  if (env_is("TASKWIRE_MALLOC_TUNING", "0") || malloc_is_not_glibcs() ||
      user_chose_malloc_options())
    return false;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // No mmap for large blocks either (glibc caps the threshold at 32 MiB): each would be
  // fresh memory, zeroed by the kernel, and unmapped on free. From the heap they are reused
  // (docs/measurements.md, "jemalloc and the allocator tuning"). Blocks a thread's arena
  // cannot hold (above 64 MiB) are still mmapped.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 256 << 20);
  return true;
}();

using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

// Looked up, not linked: a program that dlopens libtaskwire keeps its own malloc, and
// jemalloc may serve this process only through LD_PRELOAD.
Mallctl jemalloc_mallctl() noexcept {
  static const auto found = reinterpret_cast<Mallctl>(::dlsym(RTLD_DEFAULT, "mallctl"));
  return found;
}

// Freed pages jemalloc keeps, touched, for its next allocations (dirty; never purged with
// dirty_decay_ms:-1); 0 when jemalloc does not serve malloc or cannot say.
std::uint64_t allocator_kept_bytes() noexcept {
  auto* mallctl = jemalloc_mallctl();
  if (!mallctl) return 0;
  std::uint64_t epoch = 1;  // its statistics are a snapshot, refreshed by writing the epoch
  if (mallctl("epoch", nullptr, nullptr, &epoch, sizeof epoch) != 0) return 0;
  std::size_t dirty_pages = 0, page = 0;
  std::size_t len = sizeof dirty_pages;
  // Arena 4096 is MALLCTL_ARENAS_ALL: the sum over every arena.
  if (mallctl("stats.arenas.4096.pdirty", &dirty_pages, &len, nullptr, 0) != 0) return 0;
  len = sizeof page;
  if (mallctl("arenas.page", &page, &len, nullptr, 0) != 0) return 0;
  return static_cast<std::uint64_t>(dirty_pages) * page;
}

}  // namespace

bool jemalloc_serves_malloc() noexcept {
  static const bool jemalloc = jemalloc_mallctl() != nullptr && malloc_is_not_glibcs();
  return jemalloc;
}

std::uint64_t process_memory_bytes() noexcept {
  const std::uint64_t rss = resident_set_bytes();
  const std::uint64_t kept = allocator_kept_bytes();
  return rss > kept ? rss - kept : (rss ? 1 : 0);  // 0 stays "not measurable"
}

void release_free_memory() noexcept {
  release_kept_buffers();
  if (auto* mallctl = jemalloc_mallctl()) {
    // Arena 4096 is MALLCTL_ARENAS_ALL: every arena's unused pages go back at once instead
    // of after jemalloc's decay time.
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
  } else if (!malloc_is_not_glibcs()) {
    malloc_trim(0);
  }
}

}  // namespace taskwire::runtime
