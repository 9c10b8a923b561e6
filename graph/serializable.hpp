#pragma once
// A compile-time check that a graph's result type can travel between processes, for the cases
// that can be told from the type alone. Class types are accepted when default-constructible (a
// private serialize() befriending boost::serialization::access cannot be seen from outside);
// Boost.Serialization itself rejects the rest when the function is registered.
#include <array>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace taskwire::graph {

template <class T>
struct is_serializable
    : std::bool_constant<!std::is_void_v<T> && !std::is_pointer_v<T> && !std::is_reference_v<T> &&
                         !std::is_function_v<T> && !std::is_member_pointer_v<T> &&
                         !std::is_null_pointer_v<T> && std::is_default_constructible_v<T>> {};

template <class T>
inline constexpr bool is_serializable_v = is_serializable<T>::value;

template <class Sig>
struct is_serializable<std::function<Sig>> : std::false_type {};

// Containers: serializable when their elements are.
template <class T, class A>
struct is_serializable<std::vector<T, A>> : is_serializable<T> {};
template <class T, class A>
struct is_serializable<std::list<T, A>> : is_serializable<T> {};
template <class T, class A>
struct is_serializable<std::deque<T, A>> : is_serializable<T> {};
template <class T, std::size_t N>
struct is_serializable<std::array<T, N>> : is_serializable<T> {};
template <class T, class C, class A>
struct is_serializable<std::set<T, C, A>> : is_serializable<T> {};
template <class T, class H, class E, class A>
struct is_serializable<std::unordered_set<T, H, E, A>> : is_serializable<T> {};
template <class K, class V>
struct is_serializable<std::pair<K, V>>
    : std::bool_constant<is_serializable_v<std::remove_const_t<K>> && is_serializable_v<V>> {};
template <class K, class V, class C, class A>
struct is_serializable<std::map<K, V, C, A>>
    : std::bool_constant<is_serializable_v<K> && is_serializable_v<V>> {};
template <class K, class V, class H, class E, class A>
struct is_serializable<std::unordered_map<K, V, H, E, A>>
    : std::bool_constant<is_serializable_v<K> && is_serializable_v<V>> {};

}  // namespace taskwire::graph
