#pragma once
// The project's one little-endian codec: every byte that taskwire itself lays out (the
// operation headers of wire_codec.hpp, the stream framing of comm/core/framing.hpp, the MPI
// backend's heads in comm/mpi/mpi_wire.hpp, the connection handshake in
// comm/core/handshake.cpp) is written and read through this file.
//
// Two layers:
//  - store_le / load_le / append_le: one fixed-width number at a byte position, little-endian
//    whatever the host (boost::endian; a plain copy on a little-endian host).
//  - encode / decode: a lone number, std::string or std::vector of numbers in the bytes
//    Boost's binary archive writes for it on a little-endian host (a number's bytes; a 64-bit
//    count, then the elements), with memcpy instead of an archive: each Boost archive builds a
//    std::locale of its own, which costs more than the rest of the archive for a small value
//    (docs/measurements.md, "Lone numbers"). Tests compare the bytes with Boost's, so either side of a payload may use either path.
#include <boost/endian/conversion.hpp>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace taskwire::runtime::raw_codec {

template <class T>
inline constexpr bool is_number = std::is_arithmetic_v<T>;

// Byte order is only touched on a big-endian host (where long double, which boost::endian
// does not reverse, is refused at compile time).
template <class T>
inline constexpr bool reverses_bytes = std::endian::native != std::endian::little && sizeof(T) > 1;

/// Writes `value` at `out` (sizeof(T) bytes, no alignment needed), little-endian.
template <class T>
  requires is_number<T>
void store_le(char* out, T value) noexcept {
  if constexpr (reverses_bytes<T>) value = boost::endian::native_to_little(value);
  std::memcpy(out, &value, sizeof(T));
}

/// Reads a T written by store_le from the sizeof(T) bytes at `in`; the caller has checked
/// that they are there.
template <class T>
  requires is_number<T>
T load_le(const char* in) noexcept {
  T value;
  std::memcpy(&value, in, sizeof(T));
  if constexpr (reverses_bytes<T>) value = boost::endian::little_to_native(value);
  return value;
}

/// Appends `value` to `out`, little-endian.
template <class T>
  requires is_number<T>
void append_le(std::vector<char>& out, T value) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  store_le(out.data() + at, value);
}

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
    store_le(out, value);
  } else {
    using E = typename T::value_type;
    const std::uint64_t count = value.size();
    store_le(out, count);
    out += sizeof count;
    if constexpr (!reverses_bytes<E>) {
      if (count) std::memcpy(out, value.data(), count * sizeof(E));
    } else {
      for (const E& e : value) {
        store_le(out, e);
        out += sizeof(E);
      }
    }
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
    value = load_le<T>(in);
    return true;
  } else {
    using E = typename T::value_type;
    if (size < sizeof(std::uint64_t)) return false;
    const auto count = load_le<std::uint64_t>(in);
    if (count > (size - sizeof count) / sizeof(E)) return false;
    value.resize(static_cast<std::size_t>(count));
    in += sizeof count;
    if constexpr (!reverses_bytes<E>) {
      if (count) std::memcpy(value.data(), in, static_cast<std::size_t>(count) * sizeof(E));
    } else {
      for (E& e : value) {
        e = load_le<E>(in);
        in += sizeof(E);
      }
    }
    return true;
  }
}

}  // namespace taskwire::runtime::raw_codec
