// Frame::allocate, with a cache of large buffers.
//
// Why: a thread other than the main one allocates from its own glibc arena, which cannot hold
// a block of 64 MiB or more; glibc then maps fresh memory for each such block and unmaps it
// on free, so every large message paid for faulting in and clearing its pages
// (docs/measurements.md, "A cache of large frame buffers"). Large frames are rare and big, so a small
// cache in front of malloc for them costs nothing measurable and keeps their pages. The same
// cache backs allocate_buffer (large_buffer.hpp), for the big arrays tasks build and decode.
// A buffer larger than the cache ever keeps is mapped on its own and unmapped when freed, so a
// message of gigabytes gives its memory back to the kernel at once, whichever allocator serves
// malloc (glibc, as malloc_tuning.cpp tunes it, keeps part of a freed huge block;
// docs/security.md, "Bounded queues").
//
// There is no cache where jemalloc serves malloc: as taskwire configures it (malloc_tuning.cpp)
// it keeps the pages it frees for whatever is allocated next; beside it the cache held a worker's
// received frames idle after their values were decoded, memory its tasks' own arrays could not
// use, and a worker's peak grew by what the cache held (docs/measurements.md, "The first
// cluster in a process").
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/large_buffer.hpp>
#include <taskwire/runtime/process_info.hpp>

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>

namespace taskwire::runtime {
namespace {

class LargeBufferCache {
 public:
  // Kept at most. Measured (mpiexec.mpich -n 5 taskwire-bench array, 50 MB blocks, whose
  // workers hold several blocks and their frames at once): 256 MiB, 1.25-2.3 s over 11 runs;
  // 512 MiB, 1.19-1.32 s over 4.
  static constexpr std::size_t kMaxBytes = std::size_t{512} << 20;
  static constexpr std::size_t kGranule = std::size_t{1} << 20;      ///< sizes round up to this

  static std::size_t rounded(std::size_t bytes) {
    return (bytes + kGranule - 1) / kGranule * kGranule;
  }

  /// Whether a buffer of `bytes` (at least kLargeBufferBytes) comes from here: mapped on its
  /// own above what the cache keeps, else kept for reuse unless jemalloc serves malloc.
  static bool serves(std::size_t bytes) {
    return rounded(bytes) > kMaxBytes || !jemalloc_serves_malloc();
  }

  static LargeBufferCache& instance() {
    static auto* cache = new LargeBufferCache();  // never destroyed: frames may outlive statics
    return *cache;
  }

  /// A buffer of at least `capacity` bytes (a cached one up to a quarter larger, or a new one).
  char* take(std::size_t capacity, std::size_t& got) {
    if (capacity > kMaxBytes) {
      got = capacity;
      void* p = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      madvise(p, capacity, MADV_HUGEPAGE);  // as malloc_tuning.cpp asks for malloc's memory
      return static_cast<char*>(p);
    }
    {
      std::lock_guard lock(mu_);
      auto it = free_.lower_bound(capacity);
      if (it != free_.end() && it->first <= capacity + capacity / 4) {
        got = it->first;
        char* p = it->second;
        bytes_ -= got;
        free_.erase(it);
        return p;
      }
    }
    got = capacity;
    auto* p = static_cast<char*>(std::malloc(capacity));
    if (!p) throw std::bad_alloc();
    return p;
  }

  /// For allocate_buffer: take(), remembering the buffer's real capacity (up to a quarter more
  /// than asked), so that it goes back under that, not under what its user knows.
  char* lend(std::size_t bytes) {
    std::size_t got = 0;
    char* p = take(rounded(bytes), got);
    try {
      std::lock_guard lock(mu_);
      lent_.emplace(p, got);
    } catch (...) {
      give(p, got);
      throw;
    }
    return p;
  }

  void give_back(char* p, std::size_t bytes) noexcept {
    std::size_t capacity = rounded(bytes);
    {
      std::lock_guard lock(mu_);
      if (auto it = lent_.find(p); it != lent_.end()) {
        capacity = it->second;
        lent_.erase(it);
      }
    }
    give(p, capacity);
  }

  void release_free() noexcept {
    std::multimap<std::size_t, char*> kept;
    {
      std::lock_guard lock(mu_);
      kept.swap(free_);
      bytes_ = 0;
    }
    for (const auto& [capacity, p] : kept) std::free(p);
  }

  void give(char* p, std::size_t capacity) noexcept {
    if (capacity > kMaxBytes) {
      munmap(p, capacity);
      return;
    }
    {
      std::lock_guard lock(mu_);
      if (bytes_ + capacity <= kMaxBytes) {
        try {
          free_.emplace(capacity, p);
          bytes_ += capacity;
          return;
        } catch (...) {
        }
      }
    }
    std::free(p);
  }

 private:
  std::mutex mu_;
  std::multimap<std::size_t, char*> free_;  // capacity -> buffer
  std::unordered_map<char*, std::size_t> lent_;  // allocate_buffer's buffers -> capacity
  std::size_t bytes_ = 0;
};

}  // namespace

Frame Frame::allocate(std::size_t n) {
  Frame f;
  f.size_ = n;
  if (n < kCachedFrameBytes || !LargeBufferCache::serves(n)) {
    auto p = std::make_shared_for_overwrite<char[]>(n);
    f.mut_ = p.get();
    f.data_ = std::shared_ptr<const char>(std::move(p), f.mut_);
    return f;
  }
  static_assert(kCachedFrameBytes == kLargeBufferBytes);
  std::size_t capacity = 0;
  char* p = LargeBufferCache::instance().take(LargeBufferCache::rounded(n), capacity);
  // (Should the control block's allocation throw, the constructor calls the deleter itself.)
  f.data_ = std::shared_ptr<const char>(p, [capacity](const char* q) {
    LargeBufferCache::instance().give(const_cast<char*>(q), capacity);
  });
  f.mut_ = p;
  return f;
}

void* allocate_buffer(std::size_t bytes) {
  if (bytes >= kLargeBufferBytes && LargeBufferCache::serves(bytes))
    return LargeBufferCache::instance().lend(bytes);
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

void deallocate_buffer(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (bytes >= kLargeBufferBytes && LargeBufferCache::serves(bytes))
    LargeBufferCache::instance().give_back(static_cast<char*>(p), bytes);
  else std::free(p);
}

void release_kept_buffers() noexcept { LargeBufferCache::instance().release_free(); }

}  // namespace taskwire::runtime
