// Replaces the global operator new for the test executable (and, through symbol interposition,
// for libtaskwire) to remember the largest single request, so a test can prove that a prefix
// announcing a huge frame is rejected without that size ever being asked for.
#include "tcp_test_util.hpp"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <new>

namespace {

std::atomic<std::size_t> g_largest{0};

void note(std::size_t n) noexcept {
  std::size_t cur = g_largest.load(std::memory_order_relaxed);
  while (n > cur && !g_largest.compare_exchange_weak(cur, n, std::memory_order_relaxed)) {
  }
}

void* allocate(std::size_t n) {
  note(n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}

void* allocate_nothrow(std::size_t n) noexcept {
  note(n);
  return std::malloc(n ? n : 1);
}

}  // namespace

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate_nothrow(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate_nothrow(n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace taskwire::test {

namespace alloc_watch {
void reset() noexcept { g_largest.store(0); }
std::size_t largest() noexcept { return g_largest.load(); }
}  // namespace alloc_watch

std::size_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      std::size_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 12, '\n');
  }
  return 0;
}

}  // namespace taskwire::test
