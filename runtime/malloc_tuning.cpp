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
// glibc reads that tunable only at start-up, so when libtaskwire loads as a dependency of the
// program (not dlopen'ed into one), the process is still single-threaded, and the user did not
// choose a policy, the process re-executes itself once with
// GLIBC_TUNABLES=glibc.malloc.hugetlb=1 added, and restores the environment its children see.
// Then freed memory stays in the process (large blocks come from the heap, not from mmap; no
// trimming below 1 GiB free, a 256 MiB top pad): a process's footprint stays near its peak. The
// same idea as Dask's nanny, which sets MALLOC_TRIM_THRESHOLD_ before it starts a worker.
// TASKWIRE_MALLOC_TUNING=0 turns all of it off; any MALLOC_*_ variable keeps glibc's defaults.
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
#include <elf.h>
#include <link.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

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

constexpr const char* kSaved = "TASKWIRE_MALLOC_REEXEC";  // the caller's GLIBC_TUNABLES, or "-"
constexpr std::string_view kHugeTlb = "glibc.malloc.hugetlb";

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

bool user_chose_malloc_options() {
  for (const char* name :
       {"MALLOC_MMAP_THRESHOLD_", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"})
    if (std::getenv(name)) return true;
  const char* t = std::getenv("GLIBC_TUNABLES");
  return t && std::string_view(t).find("glibc.malloc.") != std::string_view::npos;
}

bool built_with_sanitizer() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#else
  return false;
#endif
}

bool under_valgrind() {  // its tools preload vgpreload_*.so; an exec would leave valgrind
  const char* p = std::getenv("LD_PRELOAD");
  return p && std::strstr(p, "vgpreload");
}

bool single_threaded() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8) == 1;
  return false;
}

// True when the main executable itself lists libtaskwire among its DT_NEEDED libraries, i.e.
// we are being initialised at process start-up, not dlopen'ed by some other program.
bool program_links_taskwire() {
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const ElfW(Dyn)* dyn = nullptr;
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        if (!dyn) return 1;
        const char* strtab = nullptr;
        for (auto* d = dyn; d->d_tag != DT_NULL; ++d)
          if (d->d_tag == DT_STRTAB) {
            // ld.so relocates these in place on x86-64; where it does not (read-only
            // dynamic sections), the value is still relative to the load address.
            auto at = d->d_un.d_ptr;
            if (at < info->dlpi_addr) at += info->dlpi_addr;
            strtab = reinterpret_cast<const char*>(at);
          }
        if (!strtab) return 1;
        for (auto* d = dyn; d->d_tag != DT_NULL; ++d)
          if (d->d_tag == DT_NEEDED && std::strstr(strtab + d->d_un.d_val, "libtaskwire"))
            *static_cast<bool*>(out) = true;
        return 1;  // the first object is the main program: stop there
      },
      &found);
  return found;
}

// Re-executes the program with the huge-page tunable; returns only if that was not done.
void reexec_with_huge_pages() {
  if (built_with_sanitizer() || under_valgrind() || !single_threaded() || !program_links_taskwire())
    return;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<char*> argv;
  for (std::size_t at = 0; at < cmdline.size(); at += std::strlen(cmdline.c_str() + at) + 1)
    argv.push_back(const_cast<char*>(cmdline.c_str() + at));
  if (argv.empty()) return;
  argv.push_back(nullptr);
  const char* old = std::getenv("GLIBC_TUNABLES");
  std::string tunables = old && *old ? std::string(old) + ":" : std::string();
  tunables += std::string(kHugeTlb) + "=1";
  setenv(kSaved, old ? old : "-", 1);
  setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  execv("/proc/self/exe", argv.data());
  // exec failed (no /proc, say): carry on with 4 KiB pages and the caller's environment.
  if (old) setenv("GLIBC_TUNABLES", old, 1);
  else unsetenv("GLIBC_TUNABLES");
  unsetenv(kSaved);
}

// In the re-executed process: glibc has read the tunable, so the children this process starts
// see the caller's environment (and, if they are taskwire programs, re-execute themselves).
void restore_environment(const char* saved) {
  if (std::strcmp(saved, "-") == 0) unsetenv("GLIBC_TUNABLES");
  else setenv("GLIBC_TUNABLES", saved, 1);
  unsetenv(kSaved);
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
  if (env_is("TASKWIRE_MALLOC_TUNING", "0") || malloc_is_not_glibcs()) return false;
  if (const char* saved = std::getenv(kSaved)) {
    restore_environment(saved);  // we are the re-executed process: the user chose nothing
  } else {
    if (user_chose_malloc_options()) return false;
    reexec_with_huge_pages();
  }
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // No mmap for large blocks either (glibc caps the threshold at 32 MiB): each would be
  // fresh memory, zeroed by the kernel, and unmapped on free. From the heap they are reused.
  // Measured: taskwire-bench array N 20000 (50 MB blocks, -n 5) mpi 5.46 s -> 1.72 s, tcp
  // 5.56 s -> 2.00 s. Blocks a thread's arena cannot hold (above 64 MiB) are still mmapped.
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
