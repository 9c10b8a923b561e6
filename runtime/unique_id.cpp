#include <taskwire/runtime/unique_id.hpp>

#include <array>
#include <cstdint>
#include <random>

#include <fmt/format.h>

namespace taskwire::runtime {

std::string random_id_128() {
  // A fresh random_device a call: it reads the kernel's source (getrandom), which is
  // thread-safe, and ids are made once per client, not per task.
  std::random_device source;
  std::array<std::uint32_t, 4> words{};
  for (auto& w : words) w = source();
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", words[0], words[1], words[2], words[3]);
}

}  // namespace taskwire::runtime
