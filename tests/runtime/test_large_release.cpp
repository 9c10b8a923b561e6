// A frame larger than the large-buffer cache ever keeps (runtime/frame.cpp) is given back to
// the kernel when freed: a process that once received a message of gigabytes does not keep
// its footprint.
#include <taskwire/runtime/frame.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <string>

using taskwire::runtime::Frame;

namespace {

std::size_t vm_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

}  // namespace

TEST_CASE("frames: one larger than the cache keeps goes back to the kernel once freed",
          "[runtime][frame]") {
  const std::size_t n = (std::size_t{768} << 20) + 12345;  // above the cache's 512 MiB
  const std::size_t before = vm_rss_bytes();
  std::size_t holding = 0;
  for (int round = 0; round < 2; ++round) {  // the second one must not find the first kept
    auto f = Frame::allocate(n);
    std::memset(f.mutable_data(), 0x5a, n);
    REQUIRE(f.data()[n - 1] == 0x5a);
    holding = vm_rss_bytes();
  }
  const std::size_t after = vm_rss_bytes();
  INFO("VmRSS before " << (before >> 20) << " MiB, holding " << (holding >> 20)
                       << " MiB, after " << (after >> 20) << " MiB");
  CHECK(holding >= before + n / 2);
  CHECK(after < before + (std::size_t{64} << 20));
}
