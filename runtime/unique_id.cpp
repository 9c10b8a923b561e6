#include <taskwire/runtime/unique_id.hpp>

#include <cstdint>
#include <random>


namespace taskwire::runtime {

std::string random_id_128() {
  // A fresh random_device a call: it reads the kernel's source (getrandom), which is
  // thread-safe, and ids are made once per client, not per task.
  std::random_device source;
  // 22 characters of 64 (URL-safe base64 without padding), not 32 hex digits: every key
  // carries the id, and the scheduler holds a million keys at once (docs/faults.md).
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  unsigned __int128 bits = 0;
  for (int i = 0; i < 4; ++i) bits = (bits << 32) | source();
  std::string id(22, '0');
  for (auto& c : id) {
    c = kDigits[static_cast<unsigned>(bits & 63)];
    bits >>= 6;
  }
  return id;
}

}  // namespace taskwire::runtime
