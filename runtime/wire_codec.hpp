#pragma once
// The codec of operation headers (runtime/batch.hpp): the protocol structs' own serialize()
// members (the Boost.Serialization convention, `ar & a & b`), written as plain little-endian
// fields: numbers, strings and vectors of numbers in raw_codec's layout (their bytes; a
// 64-bit count then the bytes), other containers as a 64-bit count then their elements,
// structs as their members in order, with no class headers.
//
// Why not a Boost archive, as for task payloads: Boost's per-object bookkeeping and the
// std::locale each archive builds dominated the scheduler thread's instructions for structs
// of a few strings and integers (docs/measurements.md, "Operation headers"). Only the protocol
// structs (runtime/protocol.hpp) go through here; users' values still use Boost.
//
// Reading never trusts the bytes: running past the end, or a count larger than the bytes
// left, throws SerializationError; a vector of structs grows only as its elements parse, so
// what a header can make the reader allocate is bounded by its own size.
#include <taskwire/runtime/raw_codec.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace taskwire::runtime::wire {

namespace detail {
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
}  // namespace detail

/// Appends values to a byte vector.
class Writer {
 public:
  explicit Writer(std::vector<char>& out) : out_(out) {}
  template <class T>
  Writer& operator<<(const T& v) {
    put(v);
    return *this;
  }
  template <class T>
  Writer& operator&(const T& v) {
    put(v);
    return *this;
  }

 private:
  template <class T>
  void put(const T& v) {
    if constexpr (raw_codec::handles<T>) {  // (resize + encode: vector::insert costs more)
      const std::size_t at = out_.size();
      out_.resize(at + raw_codec::encoded_size(v));
      raw_codec::encode(v, out_.data() + at);
    } else if constexpr (std::is_enum_v<T>) {
      put(static_cast<std::underlying_type_t<T>>(v));
    } else if constexpr (detail::is_vector<T>::value) {
      put(static_cast<std::uint64_t>(v.size()));
      for (const auto& e : v) put(e);
    } else if constexpr (detail::is_map<T>::value) {
      put(static_cast<std::uint64_t>(v.size()));
      for (const auto& [k, e] : v) {
        put(k);
        put(e);
      }
    } else {
      const_cast<T&>(v).serialize(*this, 0u);  // serialize() only reads when writing
    }
  }

  std::vector<char>& out_;
};

/// Reads values from `n` bytes at `p` (not copied).
class Reader {
 public:
  Reader(const char* p, std::size_t n) : p_(p), end_(p + n) {}
  template <class T>
  Reader& operator>>(T& v) {
    get(v);
    return *this;
  }
  template <class T>
  Reader& operator&(T& v) {
    get(v);
    return *this;
  }
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }

 private:
  [[noreturn]] static void fail(const char* what, std::uint64_t n, std::size_t left) {
    throw SerializationError(std::string("truncated operation header: ") + what + " of " +
                             std::to_string(n) + " with " + std::to_string(left) +
                             " bytes left");
  }
  // A count of elements (each at least a byte): never more than the bytes left.
  std::size_t count() {
    std::uint64_t n = 0;
    get(n);
    if (n > remaining()) fail("a count", n, remaining());
    return static_cast<std::size_t>(n);
  }
  template <class T>
  void get(T& v) {
    if constexpr (raw_codec::handles<T>) {  // refuses a count larger than the bytes left
      if (!raw_codec::decode(p_, remaining(), v)) {
        if constexpr (raw_codec::is_number<T>) fail("a field", sizeof(T), remaining());
        std::uint64_t n = 0;  // a string or vector: say what its count claimed
        get(n);
        fail("a count", n, remaining());
      }
      p_ += raw_codec::encoded_size(v);
    } else if constexpr (std::is_enum_v<T>) {
      std::underlying_type_t<T> u{};
      get(u);
      v = static_cast<T>(u);
    } else if constexpr (detail::is_vector<T>::value) {
      // Grown as elements parse: a lying count costs no more than the bytes do.
      const std::size_t n = count();
      v.clear();
      v.reserve(std::min<std::size_t>(n, kReserveAtMost));
      for (std::size_t i = 0; i < n; ++i) get(v.emplace_back());
    } else if constexpr (detail::is_map<T>::value) {
      const auto n = count();
      v.clear();
      for (std::size_t i = 0; i < n; ++i) {
        typename T::key_type k{};
        typename T::mapped_type e{};
        get(k);
        get(e);
        v.insert_or_assign(std::move(k), std::move(e));
      }
    } else {
      v.serialize(*this, 0u);
    }
  }

  static constexpr std::size_t kReserveAtMost = 1024;
  const char* p_;
  const char* end_;
};

}  // namespace taskwire::runtime::wire
