// Frame::allocate keeps large buffers once freed (runtime/frame.cpp): a pool thread that
// receives one big message after another must not fault in fresh memory for each.
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/large_buffer.hpp>

#include <catch2/catch.hpp>
#include <sys/resource.h>

#include <cstring>
#include <thread>
#include <vector>

using taskwire::runtime::Frame;

namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// Allocates a frame of `n` bytes, writes every byte, and returns the page faults that took.
long faults_to_fill(std::size_t n) {
  const long before = minor_faults();
  auto f = Frame::allocate(n);
  std::memset(f.mutable_data(), 0x5a, n);
  REQUIRE(f.size() == n);
  REQUIRE(f.data()[n - 1] == 0x5a);
  return minor_faults() - before;
}

}  // namespace

TEST_CASE("frames: a large buffer freed on a thread is reused there, without new page faults",
          "[runtime][frame]") {
  const std::size_t n = (std::size_t{64} << 20) + 12345;  // above what a thread's arena holds
  long first = 0, again = 0, smaller = 0;
  std::thread t([&] {
    first = faults_to_fill(n);
    again = faults_to_fill(n);
    smaller = faults_to_fill(n - (std::size_t{4} << 20));  // within a quarter: same buffer
  });
  t.join();
  INFO("faults: first " << first << ", again " << again << ", smaller " << smaller);
  CHECK(first >= 16);  // fresh memory: at least one fault per 2 MiB huge page
  CHECK(again <= first / 8);
  CHECK(smaller <= first / 8);
}

TEST_CASE("frames: small and large frames hold their bytes and share them on copy",
          "[runtime][frame]") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{4096},
                        Frame::kCachedFrameBytes - 1, Frame::kCachedFrameBytes,
                        Frame::kCachedFrameBytes + 3}) {
    INFO("bytes " << n);
    auto f = Frame::allocate(n);
    if (n) {
      f.mutable_data()[n - 1] = 'z';
      f.mutable_data()[0] = 'a';
    }
    Frame copy = f;
    CHECK(copy.size() == n);
    CHECK(copy.data() == f.data());
    if (n) CHECK(copy.data()[0] == 'a');
    if (n > 1) CHECK(copy.data()[n - 1] == 'z');
  }
}

TEST_CASE("buffers: a task's big array reuses freed memory, small ones work as usual",
          "[runtime][frame]") {
  using Vec = std::vector<double, taskwire::runtime::BufferAllocator<double>>;
  // Above what a thread's glibc arena holds (64 MiB), where malloc alone gives fresh pages.
  // (72 MiB: no other test here leaves a buffer that size in the cache.)
  const std::size_t n = ((std::size_t{72} << 20) + 4096) / sizeof(double);
  auto faults_to_build = [](std::size_t count) {
    const long before = minor_faults();
    Vec v(count);  // default-initialised: no pass over the memory
    for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<double>(i);
    REQUIRE(v[count - 1] == static_cast<double>(count - 1));
    return minor_faults() - before;
  };
  long first = 0, again = 0;
  std::thread t([&] {
    first = faults_to_build(n);
    again = faults_to_build(n);
  });
  t.join();
  INFO("faults: first " << first << ", again " << again);
  CHECK(first >= 16);
  CHECK(again <= first / 8);
  Vec small{1.0, 2.0, 3.0};
  small.push_back(4.0);
  CHECK(small.size() == 4);
  CHECK(small.back() == 4.0);
}

TEST_CASE("buffers: a buffer lent for less than its size goes back under its real size",
          "[runtime][frame]") {
  using taskwire::runtime::allocate_buffer;
  using taskwire::runtime::deallocate_buffer;
  const std::size_t big = std::size_t{100} << 20, smaller = std::size_t{90} << 20;
  void* p = allocate_buffer(big);
  deallocate_buffer(p, big);
  void* q = allocate_buffer(smaller);  // the same buffer: within a quarter of the request
  CHECK(q == p);
  deallocate_buffer(q, smaller);
  void* r = allocate_buffer(big);  // still known as 100 MiB, so it serves 100 MiB again
  CHECK(r == p);
  deallocate_buffer(r, big);
}
