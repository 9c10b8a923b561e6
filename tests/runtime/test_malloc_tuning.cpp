// The start-up malloc policy (runtime/malloc_tuning.cpp): this test binary links libtaskwire,
// so it either runs on jemalloc with taskwire's options (built into test_runtime with
// TASKWIRE_WITH_JEMALLOC) or on the system allocator (test_system_malloc, or a build without
// jemalloc), which ctest starts with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 as the guide tells
// a user of that allocator to (the library no longer re-executes the process to set it).
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/process_info.hpp>

#include <catch2/catch.hpp>

#ifdef TASKWIRE_WITH_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include <sys/mman.h>
#include <sys/types.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
namespace {

std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  const auto open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos ? "" : line.substr(open + 1, close - open - 1);
}

std::size_t anon_huge_kib() {
  std::ifstream f("/proc/self/smaps_rollup");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("AnonHugePages:", 0) == 0) return std::stoul(line.substr(14));
  return 0;
}

}  // namespace
#endif

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST_CASE("large allocations are backed by huge pages when the kernel offers them", "[runtime][malloc]") {
  const std::string mode = thp_mode();
  INFO("transparent_hugepage mode: " << mode);
#ifdef TASKWIRE_WITH_JEMALLOC
  const bool user_policy = std::getenv("MALLOC_CONF") != nullptr;
#else  // glibc asks for huge pages when started with the tunable the guide names
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const bool user_policy = !tunables || std::strcmp(tunables, "glibc.malloc.hugetlb=1") != 0;
#endif
  if (std::getenv("TASKWIRE_MALLOC_TUNING") || user_policy || mode == "never" || mode.empty()) {
    WARN("huge pages not expected here (THP mode '" << mode << "' or a user malloc policy): checking nothing else");
    return;
  }
  const std::size_t before = anon_huge_kib();
  constexpr std::size_t bytes = std::size_t{64} << 20;
  auto block = std::make_unique<char[]>(bytes);  // value-initialised: every page touched
  const std::size_t after = anon_huge_kib();
  CHECK(block[bytes - 1] == 0);
  CHECK(after - before >= (bytes >> 10) / 2);  // at least half of it in 2 MiB pages
}
#endif

#ifdef TASKWIRE_WITH_JEMALLOC
TEST_CASE("jemalloc serves the process's malloc, with taskwire's options", "[runtime][malloc]") {
  std::uint64_t* allocated = nullptr;  // this thread's running total of bytes jemalloc handed out
  std::size_t len = sizeof allocated;
  REQUIRE(mallctl("thread.allocatedp", &allocated, &len, nullptr, 0) == 0);
  const std::uint64_t before = *allocated;
  void* volatile p = std::malloc(1 << 20);  // plain malloc, from libc's point of view
  REQUIRE(p != nullptr);
  CHECK(*allocated - before >= (1u << 20));
  std::free(p);
  if (std::getenv("MALLOC_CONF")) {
    WARN("MALLOC_CONF is set: not checking taskwire's default options");
    return;
  }
  const char* thp = nullptr;
  len = sizeof thp;
  REQUIRE(mallctl("opt.thp", &thp, &len, nullptr, 0) == 0);
  if (std::string(thp) == "not supported") WARN("jemalloc finds no transparent huge pages here: not checking opt.thp");
  else CHECK(std::string(thp) == "always");
  std::size_t oversize = 1;
  len = sizeof oversize;
  REQUIRE(mallctl("opt.oversize_threshold", &oversize, &len, nullptr, 0) == 0);
  CHECK(oversize == 0);
  unsigned arenas = 0;
  len = sizeof arenas;
  REQUIRE(mallctl("opt.narenas", &arenas, &len, nullptr, 0) == 0);
  CHECK(arenas == 1);
  ssize_t decay_ms = 0;
  len = sizeof decay_ms;
  REQUIRE(mallctl("opt.dirty_decay_ms", &decay_ms, &len, nullptr, 0) == 0);
  CHECK(decay_ms == -1);
}

TEST_CASE("process memory: freed blocks jemalloc keeps resident do not count",
          "[runtime][malloc]") {
  constexpr std::size_t bytes = std::size_t{64} << 20;
  auto block = std::make_unique<char[]>(bytes);  // value-initialised: every page touched
  const std::uint64_t held = taskwire::runtime::process_memory_bytes();
  CHECK(held >= bytes);
  block.reset();
  // Freed, not purged: still resident (dirty_decay_ms:-1), no longer counted.
  const std::uint64_t after = taskwire::runtime::process_memory_bytes();
  CHECK(after + bytes / 2 <= held);
  CHECK(taskwire::runtime::resident_set_bytes() >= after);
}

// A worker's received frames are freed once their values are decoded: with jemalloc their
// pages go back to it, for the tasks' own arrays, and count no more (a cache of its own kept
// them idle, and counted, up to 512 MiB).
TEST_CASE("process memory: a freed large frame goes back to jemalloc and does not count",
          "[runtime][malloc][frame]") {
  CHECK(taskwire::runtime::jemalloc_serves_malloc());
  constexpr std::size_t bytes = (std::size_t{64} << 20) + 8;  // a 64 MiB vector's frame
  auto frame = taskwire::runtime::Frame::allocate(bytes);
  std::memset(frame.mutable_data(), 0x5a, bytes);
  const std::uint64_t held = taskwire::runtime::process_memory_bytes();
  frame = taskwire::runtime::Frame();
  const std::uint64_t after = taskwire::runtime::process_memory_bytes();
  INFO("process memory holding the frame " << (held >> 20) << " MiB, after " << (after >> 20)
                                           << " MiB");
  CHECK(after + bytes / 2 <= held);
}
#endif
