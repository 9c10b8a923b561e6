#pragma once
// The bytes Boost's binary archive writes for a lone number, std::string or std::vector of
// numbers, written and read with memcpy instead. Each Boost archive builds a std::locale of
// its own (basic_binary_iprimitive keeps one even with no_codecvt), which costs more than
// the rest of the archive for a small value: perf showed 10-14 % of a worker's time in
// locale construction and destruction in a map/reduce over integers. The layout is Boost's
// (tests compare the bytes), so either side may use either path.
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace taskwire::runtime::raw_codec {

template <class T>
inline constexpr bool is_number = std::is_arithmetic_v<T>;

template <class T>
struct Traits : std::false_type {};
template <class T>
  requires is_number<T>
struct Traits<T> : std::true_type {};
template <>
struct Traits<std::string> : std::true_type {};
// vector<bool> is Boost's own case (a count, then a byte per element through a proxy), and a
// vector with another allocator gets Boost's class header (only the default one is declared
// a collection without one): both left to Boost.
template <class T>
  requires(is_number<T> && !std::is_same_v<T, bool>)
struct Traits<std::vector<T>> : std::true_type {};

/// True for the types this file encodes: numbers, std::string, vectors of numbers but bool.
template <class T>
inline constexpr bool handles = Traits<std::remove_cv_t<T>>::value;

/// Bytes `value` encodes to.
template <class T>
std::size_t encoded_size(const T& value) {
  if constexpr (is_number<T>) return sizeof(T);
  else return sizeof(std::uint64_t) + value.size() * sizeof(typename T::value_type);
}

/// Writes `value` at `out`, which has room for encoded_size(value) bytes.
template <class T>
void encode(const T& value, char* out) {
  if constexpr (is_number<T>) {
    std::memcpy(out, &value, sizeof(T));
  } else {
    const std::uint64_t count = value.size();
    std::memcpy(out, &count, sizeof count);
    if (count) std::memcpy(out + sizeof count, value.data(), count * sizeof(typename T::value_type));
  }
}

/// Reads `value` from `size` bytes at `in`; false if they are too few (trailing bytes are
/// ignored, as a Boost archive ignores them). A count larger than the bytes present is
/// refused before anything is allocated.
template <class T>
bool decode(const char* in, std::size_t size, T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    if (size < 1) return false;
    value = in[0] != 0;  // any other byte would make an invalid bool
    return true;
  } else if constexpr (is_number<T>) {
    if (size < sizeof(T)) return false;
    std::memcpy(&value, in, sizeof(T));
    return true;
  } else {
    using E = typename T::value_type;
    std::uint64_t count = 0;
    if (size < sizeof count) return false;
    std::memcpy(&count, in, sizeof count);
    if (count > (size - sizeof count) / sizeof(E)) return false;
    value.resize(static_cast<std::size_t>(count));
    if (count) std::memcpy(value.data(), in + sizeof count, static_cast<std::size_t>(count) * sizeof(E));
    return true;
  }
}

}  // namespace taskwire::runtime::raw_codec
