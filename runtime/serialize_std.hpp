#pragma once
// Boost.Serialization for std::optional, std::tuple and std::variant, which Boost 1.74 (the
// Debian 12 package) does not serialize. Include it where such a type is sent; every process
// must read the type the same way, so include it in the code every process links. Where a
// newer Boost serializes the type itself, its header is used instead.
#include <boost/serialization/split_free.hpp>
#include <boost/version.hpp>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <variant>

#if BOOST_VERSION >= 108400
#include <boost/serialization/optional.hpp>
#define TASKWIRE_BOOST_HAS_STD_OPTIONAL 1
#endif
#if __has_include(<boost/serialization/std_variant.hpp>)
#include <boost/serialization/std_variant.hpp>
#define TASKWIRE_BOOST_HAS_STD_VARIANT 1
#endif

namespace boost::serialization {

#ifndef TASKWIRE_BOOST_HAS_STD_OPTIONAL
/// A flag, then the value when there is one.
template <class Archive, class T>
void save(Archive& ar, const std::optional<T>& value, const unsigned int) {
  const bool has = value.has_value();
  ar << has;
  if (has) ar << *value;
}
template <class Archive, class T>
void load(Archive& ar, std::optional<T>& value, const unsigned int) {
  bool has = false;
  ar >> has;
  if (!has) {
    value.reset();
    return;
  }
  value.emplace();
  ar >> *value;
}
template <class Archive, class T>
void serialize(Archive& ar, std::optional<T>& value, const unsigned int version) {
  split_free(ar, value, version);
}
#endif

/// The elements in order.
template <class Archive, class... T>
void serialize(Archive& ar, std::tuple<T...>& value, const unsigned int) {
  std::apply([&ar](auto&... element) { ((ar & element), ...); }, value);
}

#ifndef TASKWIRE_BOOST_HAS_STD_VARIANT
/// The index of the alternative held, then its value. Alternatives must be
/// default-constructible (the reader builds one, then reads into it).
template <class Archive, class... T>
void save(Archive& ar, const std::variant<T...>& value, const unsigned int) {
  if (value.valueless_by_exception())
    throw std::invalid_argument("a valueless std::variant cannot be sent");
  const std::size_t index = value.index();
  ar << index;
  std::visit([&ar](const auto& held) { ar << held; }, value);
}
template <class Archive, class... T>
void load(Archive& ar, std::variant<T...>& value, const unsigned int) {
  std::size_t index = 0;
  ar >> index;
  if (index >= sizeof...(T)) throw std::invalid_argument("a std::variant's index is out of range");
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((I == index ? (ar >> value.template emplace<I>(), true) : false) || ...);
  }(std::index_sequence_for<T...>{});
}
template <class Archive, class... T>
void serialize(Archive& ar, std::variant<T...>& value, const unsigned int version) {
  split_free(ar, value, version);
}
#endif

}  // namespace boost::serialization
