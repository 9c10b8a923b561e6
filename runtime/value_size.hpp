#pragma once
// How many bytes a live value holds, for a worker's memory accounting (what it reports to the
// scheduler, when it pauses and spills), measured once when the value is made, without
// serializing it where its type tells (docs/worker-data.md, "Sizes"):
// - a type with a free `std::uint64_t taskwire_nbytes(const T&)` found by argument-dependent
//   lookup: what that says (the hook for types whose size only they know);
// - a trivially copyable type (numbers, std::array of numbers, plain structs): sizeof(T);
// - std::string, and std::vector of numbers: the object plus its capacity (the memory held,
//   which is what a memory limit is about, not only the bytes used);
// - std::vector of such types: the object, its spare capacity, and each element's size;
// - anything else: the size it serializes to, measured by one counting pass of the archive
//   (no output is written or kept).
#include <taskwire/runtime/byte_buffers.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <concepts>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace taskwire::runtime {

namespace value_size_detail {

template <class T>
concept has_hook = requires(const T& v) {
  { taskwire_nbytes(v) } -> std::convertible_to<std::uint64_t>;
};

template <class T>
struct is_vector : std::false_type {};
template <class E, class A>
struct is_vector<std::vector<E, A>> : std::true_type {};

template <class T>
constexpr bool sized_by_type() {
  if constexpr (has_hook<T> || std::is_trivially_copyable_v<T> || std::is_same_v<T, std::string>)
    return true;
  else if constexpr (is_vector<T>::value && !std::is_same_v<T, std::vector<bool>>)
    return sized_by_type<typename T::value_type>();
  else
    return false;
}

}  // namespace value_size_detail

/// Bytes `value` holds in memory (see the top of this file).
template <class T>
std::uint64_t value_nbytes(const T& value) {
  namespace d = value_size_detail;
  if constexpr (d::has_hook<T>) {
    return static_cast<std::uint64_t>(taskwire_nbytes(value));
  } else if constexpr (std::is_trivially_copyable_v<T>) {
    return sizeof(T);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return sizeof(T) + value.capacity();
  } else if constexpr (d::sized_by_type<T>()) {  // a vector of sized elements
    using E = typename T::value_type;
    std::uint64_t n = sizeof(T) + (value.capacity() - value.size()) * sizeof(E);
    if constexpr (std::is_trivially_copyable_v<E> && !d::has_hook<E>) {
      n += value.size() * sizeof(E);
    } else {
      for (const auto& e : value) n += value_nbytes(e);
    }
    return n;
  } else {
    return detail::serialize_into(nullptr, 0, value);
  }
}

}  // namespace taskwire::runtime
