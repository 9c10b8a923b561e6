#pragma once
// Serialization: which types taskwire can send (task arguments, results, scattered data), and
// to_frame/from_frame, which write and read them as frames (Boost.Serialization binary
// archives, no tracking of object addresses). Reading never trusts the frame: a malformed or
// truncated frame throws runtime::SerializationError instead of crashing.
//
// What can be sent is told at compile time, so that an unsendable type fails with one
// static_assert naming it and the fix instead of pages of Boost.Serialization internals:
// to_frame/from_frame check every type they are given, and Client::submit and
// TASKWIRE_REGISTER reach them for every argument and result. The README's "What can be
// sent" says the same for users.
//
// A type is sendable when it is
// - a number, an enum or std::string;
// - a class with a member named `serialize` (public, or private with
//   `friend class boost::serialization::access`: a member's existence is seen whatever its
//   access), or a free `template <class Archive> serialize(Archive&, T&, unsigned)` found by
//   argument-dependent lookup or in namespace boost::serialization;
// - a standard container or utility whose Boost header is included (the free serialize of
//   that header is what is looked for) and whose elements are sendable;
// - marked primitive for Boost (BOOST_CLASS_IMPLEMENTATION(T, primitive_type)), or final (a
//   final class cannot be probed for members: Boost itself then tells).
// A free serialize that is not a template over the archive is not seen (write it as one).
#include <taskwire/runtime/frame.hpp>

#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/serialization/level.hpp>
#include <boost/serialization/serialization.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <algorithm>
#include <array>
#include <bitset>
#include <complex>
#include <cstddef>
#include <cstring>
#include <deque>
#include <forward_list>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace taskwire::runtime {

// ---- std::streambufs over plain memory, for the archives -------------------------------
// Reading a frame in place, or writing into a caller's span (counting what did not fit).
// Archives built on a streambuf skip the std::ostream/istream and Boost.Iostreams layers,
// which cost a locale and several allocations per message.

/// Reads `n` bytes at `p` (not copied; they must outlive the buffer).
class ReadBuffer : public std::streambuf {
 public:
  ReadBuffer(const char* p, std::size_t n) {
    auto* b = const_cast<char*>(p);  // the get area is never written through
    setg(b, b, b + n);
  }
};

/// Writes into [p, p + capacity) while everything fits; after the first write that does not,
/// only counts, so `size()` is what the whole output needs.
class SpanWriteBuffer : public std::streambuf {
 public:
  SpanWriteBuffer(char* p, std::size_t capacity) : base_(p), capacity_(capacity) {}
  std::size_t size() const noexcept { return size_; }
  bool fits() const noexcept { return size_ <= capacity_; }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto len = static_cast<std::size_t>(n);
    if (size_ + len <= capacity_) std::memcpy(base_ + size_, s, len);
    size_ += len;
    return n;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    xsputn(&ch, 1);
    return c;
  }

 private:
  char* base_;
  std::size_t capacity_;
  std::size_t size_ = 0;
};

// ---- What can be sent (see the top of this file) ---------------------------------------

namespace sendable_detail {

// A free serialize other than Boost's catch-all (which only forwards to a member): ours below
// is more specialised than the catch-all and exactly as specialised as any real overload, so
// the call is ambiguous (a substitution failure) exactly when a real overload exists.
struct ProbeArchive {};
struct NoFreeSerialize {};
template <class T>
NoFreeSerialize serialize(ProbeArchive&, T&, const unsigned int);

template <class T, class = void>
struct has_free_serialize : std::true_type {};
template <class T>
struct has_free_serialize<
    T, std::enable_if_t<std::is_same_v<decltype(serialize(std::declval<ProbeArchive&>(), std::declval<T&>(),
                                                          std::declval<boost::serialization::version_type>())),
                                       NoFreeSerialize>>> : std::false_type {};

// A member named serialize, whatever its access: naming it through a class that also derives
// from one with a public `serialize` is ambiguous exactly when T has one.
struct MemberFallback {
  void serialize();
};
template <class T>
struct MemberProbe : T, MemberFallback {};
template <class T, class = void>
struct has_member_serialize : std::true_type {};
template <class T>
struct has_member_serialize<T, std::void_t<decltype(&MemberProbe<T>::serialize)>> : std::false_type {};

template <class T>
constexpr bool is_boost_primitive() {
  return boost::serialization::implementation_level<T>::value ==
         boost::serialization::primitive_type;
}

template <class... T>
struct Types {};

/// The element types of a standard container or utility; `known` false for other types.
template <class T>
struct Parts {
  static constexpr bool known = false;
  using types = Types<>;
};
#define TASKWIRE_SENDABLE_PARTS(params, type, ...) \
  template <params>                                \
  struct Parts<type> {                             \
    static constexpr bool known = true;            \
    using types = Types<__VA_ARGS__>;              \
  }
#define TASKWIRE_COMMA ,
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA class A, std::vector<T TASKWIRE_COMMA A>, T);
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA class A, std::list<T TASKWIRE_COMMA A>, T);
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA class A, std::deque<T TASKWIRE_COMMA A>, T);
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA class A, std::forward_list<T TASKWIRE_COMMA A>, T);
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA std::size_t N, std::array<T TASKWIRE_COMMA N>, T);
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA class C TASKWIRE_COMMA class A,
                        std::set<T TASKWIRE_COMMA C TASKWIRE_COMMA A>, T);
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA class C TASKWIRE_COMMA class A,
                        std::multiset<T TASKWIRE_COMMA C TASKWIRE_COMMA A>, T);
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA class H TASKWIRE_COMMA class E TASKWIRE_COMMA class A,
                        std::unordered_set<T TASKWIRE_COMMA H TASKWIRE_COMMA E TASKWIRE_COMMA A>, T);
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA class H TASKWIRE_COMMA class E TASKWIRE_COMMA class A,
                        std::unordered_multiset<T TASKWIRE_COMMA H TASKWIRE_COMMA E TASKWIRE_COMMA A>, T);
TASKWIRE_SENDABLE_PARTS(class K TASKWIRE_COMMA class V TASKWIRE_COMMA class C TASKWIRE_COMMA class A,
                        std::map<K TASKWIRE_COMMA V TASKWIRE_COMMA C TASKWIRE_COMMA A>, K, V);
TASKWIRE_SENDABLE_PARTS(class K TASKWIRE_COMMA class V TASKWIRE_COMMA class C TASKWIRE_COMMA class A,
                        std::multimap<K TASKWIRE_COMMA V TASKWIRE_COMMA C TASKWIRE_COMMA A>, K, V);
TASKWIRE_SENDABLE_PARTS(class K TASKWIRE_COMMA class V TASKWIRE_COMMA class H TASKWIRE_COMMA class E
                            TASKWIRE_COMMA class A,
                        std::unordered_map<K TASKWIRE_COMMA V TASKWIRE_COMMA H TASKWIRE_COMMA E
                                               TASKWIRE_COMMA A>,
                        K, V);
TASKWIRE_SENDABLE_PARTS(class K TASKWIRE_COMMA class V TASKWIRE_COMMA class H TASKWIRE_COMMA class E
                            TASKWIRE_COMMA class A,
                        std::unordered_multimap<K TASKWIRE_COMMA V TASKWIRE_COMMA H TASKWIRE_COMMA E
                                                    TASKWIRE_COMMA A>,
                        K, V);
TASKWIRE_SENDABLE_PARTS(class K TASKWIRE_COMMA class V, std::pair<K TASKWIRE_COMMA V>, K, V);
TASKWIRE_SENDABLE_PARTS(class T, std::complex<T>, T);
TASKWIRE_SENDABLE_PARTS(class T TASKWIRE_COMMA class D, std::unique_ptr<T TASKWIRE_COMMA D>, T);
TASKWIRE_SENDABLE_PARTS(class T, std::shared_ptr<T>, T);
TASKWIRE_SENDABLE_PARTS(class T, std::optional<T>, T);
TASKWIRE_SENDABLE_PARTS(class... T, std::tuple<T...>, T...);
TASKWIRE_SENDABLE_PARTS(class... T, std::variant<T...>, T...);
TASKWIRE_SENDABLE_PARTS(std::size_t N, std::bitset<N>, );
#undef TASKWIRE_COMMA
#undef TASKWIRE_SENDABLE_PARTS

template <class T>
using bare = std::remove_cv_t<T>;

/// Why a type cannot be sent (none: it can).
enum class Reason { none, pointer, reference, function, not_value, no_serialize, missing_header };

template <class T>
constexpr Reason own_reason() {
  using U = bare<T>;
  if constexpr (std::is_reference_v<T>) return Reason::reference;
  else if constexpr (std::is_pointer_v<U> || std::is_member_pointer_v<U> || std::is_null_pointer_v<U>)
    return Reason::pointer;
  else if constexpr (std::is_function_v<U>) return Reason::function;
  else if constexpr (std::is_void_v<U> || std::is_array_v<U>) return Reason::not_value;
  else if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U> || std::is_same_v<U, std::string>)
    return Reason::none;
  else if constexpr (Parts<U>::known) return has_free_serialize<U>::value ? Reason::none : Reason::missing_header;
  else if constexpr (!std::is_class_v<U> || std::is_final_v<U> || is_boost_primitive<U>()) return Reason::none;
  else if constexpr (has_member_serialize<U>::value || has_free_serialize<U>::value) return Reason::none;
  else return Reason::no_serialize;
}

template <class... T>
struct FirstUnsendable;

/// The innermost type that makes T unsendable (void when T is sendable): a container whose
/// Boost header is missing, or an element that cannot be sent.
template <class T>
struct Unsendable {
  using type = std::conditional_t<own_reason<T>() != Reason::none, T,
                                  typename FirstUnsendable<typename Parts<bare<T>>::types>::type>;
};
template <>
struct FirstUnsendable<Types<>> {
  using type = void;
};
template <class T, class... Rest>
struct FirstUnsendable<Types<T, Rest...>> {
  using inner = typename Unsendable<T>::type;
  using type = std::conditional_t<std::is_void_v<inner>, typename FirstUnsendable<Types<Rest...>>::type, inner>;
};

template <class T>
inline constexpr bool always_false = false;

}  // namespace sendable_detail

/// True when taskwire can send a T (see the top of this file).
template <class T>
inline constexpr bool is_sendable_v = std::is_void_v<typename sendable_detail::Unsendable<T>::type>;

/// The type that keeps T from being sent (T itself or one of its elements); void when none.
template <class T>
using unsendable_part_t = typename sendable_detail::Unsendable<T>::type;

namespace sendable_detail {
// One static_assert per reason; the compiler's "[with Bad = ...]" line names the type.
template <class Bad>
constexpr bool report() {
  constexpr Reason why = own_reason<Bad>();
  static_assert(why != Reason::pointer, "taskwire: this pointer type cannot be sent (an address means nothing in "
                                        "another process): send the value it points to");
  static_assert(why != Reason::reference, "taskwire: a reference cannot be sent: send the value");
  static_assert(why != Reason::function, "taskwire: a function cannot be sent: register it with "
                                         "TASKWIRE_REGISTER and submit it, or send its name");
  static_assert(why != Reason::not_value, "taskwire: void or a C array cannot be sent: use a value type "
                                          "(std::array, std::vector)");
  static_assert(why != Reason::no_serialize,
                "taskwire: type Bad (named in '[with Bad = ...]' above) cannot be sent: give it a serialize(Archive&, unsigned) member, or "
                "include <boost/serialization/...> for std types; see README 'What can be sent'");
  static_assert(why != Reason::missing_header,
                "taskwire: std type Bad (named in '[with Bad = ...]' above) cannot be sent without its Boost.Serialization header: "
                "include <boost/serialization/X.hpp> (list, deque, set, map, unordered_map, "
                "unordered_set, utility for std::pair, array, complex, bitset, unique_ptr, shared_ptr) "
                "or <taskwire/runtime/serialize_std.hpp> (std::optional, std::tuple, std::variant); "
                "see README 'What can be sent'");
  return true;
}
}  // namespace sendable_detail

namespace sendable_detail {
template <class T>
constexpr bool check_one() {
  if constexpr (is_sendable_v<T>) return true;
  else return report<unsendable_part_t<T>>() && false;
}
}  // namespace sendable_detail

/// A compile-time error naming the type (and the fix) when some T cannot be sent; true
/// otherwise. Use as the condition of an `if constexpr` guarding the code that would
/// serialize, so that Boost's own errors for the type do not follow taskwire's.
template <class... T>
constexpr bool check_sendable() {
  return (sendable_detail::check_one<T>() & ... & true);
}

// ---- to_frame / from_frame --------------------------------------------------------------

struct SerializationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr unsigned kArchiveFlags =
    boost::archive::no_header | boost::archive::no_codecvt | boost::archive::no_tracking;

namespace detail {
template <class... T>
std::size_t serialize_into(char* p, std::size_t capacity, const T&... values) {
  SpanWriteBuffer buf(p, capacity);
  {
    boost::archive::binary_oarchive ar(buf, kArchiveFlags);
    (ar << ... << values);
  }
  return buf.size();
}

/// A per-thread scratch area for small outputs; a nested to_frame (from inside a serialize())
/// finds it taken and uses none.
struct Scratch {
  static constexpr std::size_t kBytes = 64 * 1024;
  std::unique_ptr<char[]> bytes = std::make_unique_for_overwrite<char[]>(kBytes);
  bool taken = false;
};

template <class T, class... Of>
inline constexpr bool is_one_of = (std::is_same_v<T, Of> || ...);
/// The types to_frame writes without an archive, in the bytes Boost's binary archive writes
/// for them on a little-endian host: a lone number, std::string, or a std::vector of numbers
/// but bool. Each archive builds a std::locale of its own, which costs more than the rest of
/// the archive for a small value (docs/measurements.md, "Lone numbers"). The codec
/// (runtime/raw_codec.hpp) is compiled once, in serialize.cpp, for exactly these types.
template <class T>
inline constexpr bool is_raw_number =
    is_one_of<T, bool, char, signed char, unsigned char, wchar_t, char8_t, char16_t, char32_t,
              short, unsigned short, int, unsigned, long, unsigned long, long long,
              unsigned long long, float, double, long double>;
template <class T>
struct RawEncoded : std::bool_constant<is_raw_number<T> || std::is_same_v<T, std::string>> {};
template <class E>
struct RawEncoded<std::vector<E>> : std::bool_constant<is_raw_number<E> && !std::is_same_v<E, bool>> {};
template <class T>
inline constexpr bool is_raw_encoded = RawEncoded<T>::value;

/// `value` as a frame of exactly its encoded size, for an is_raw_encoded type (serialize.cpp).
template <class T>
Frame raw_to_frame(const T& value);
/// Reads `value` from `frame`; false if the frame is shorter than the value (serialize.cpp).
template <class T>
bool raw_from_frame(const Frame& frame, T& value);

template <class... T>
Frame to_frame_checked(const T&... values);
template <class... T>
void from_frame_checked(const Frame& frame, T&... values);
}  // namespace detail

/// Serializes `values` into one frame of exactly the size they need. Small outputs go through
/// a per-thread scratch area and are copied once; larger ones are measured by that first pass
/// and serialized a second time straight into their frame, so a big payload is copied once
/// and never into a growing buffer (whose fresh pages and re-copies cost more than the pass).
template <class... T>
Frame to_frame(const T&... values) {
  if constexpr (!check_sendable<T...>()) {
    return {};  // not reached: check_sendable failed to compile
  } else {
    return detail::to_frame_checked(values...);
  }
}

/// Reads `values` from `frame`; throws SerializationError for a malformed frame.
template <class... T>
void from_frame(const Frame& frame, T&... values) {
  if constexpr (check_sendable<T...>()) detail::from_frame_checked(frame, values...);
}

namespace detail {
template <class... T>
Frame to_frame_checked(const T&... values) {
  if constexpr (sizeof...(T) == 1 && (is_raw_encoded<T> && ...)) return raw_to_frame(values...);
  thread_local detail::Scratch scratch;
  const bool use_scratch = !scratch.taken;
  std::size_t need = 0;
  if (use_scratch) {
    scratch.taken = true;
    try {
      need = detail::serialize_into(scratch.bytes.get(), detail::Scratch::kBytes, values...);
    } catch (...) {
      scratch.taken = false;
      throw;
    }
    scratch.taken = false;
    if (need <= detail::Scratch::kBytes) return Frame::copy_of(scratch.bytes.get(), need);
  } else {
    need = detail::serialize_into(nullptr, 0, values...);
  }
  auto frame = Frame::allocate(need);
  if (detail::serialize_into(frame.mutable_data(), need, values...) != need)
    throw SerializationError("a value serialized to a different size the second time");
  return frame;
}

template <class... T>
void from_frame_checked(const Frame& frame, T&... values) {
  if constexpr (sizeof...(T) == 1 && (is_raw_encoded<T> && ...)) {
    if (!raw_from_frame(frame, values...))
      throw SerializationError("cannot deserialize a " + std::to_string(frame.size()) +
                               "-byte frame: it is shorter than the value it should hold");
    return;
  }
  try {
    ReadBuffer buf(frame.data(), frame.size());
    boost::archive::binary_iarchive ar(buf, kArchiveFlags);
    (ar >> ... >> values);
  } catch (const std::exception& e) {
    throw SerializationError(std::string("cannot deserialize a ") + std::to_string(frame.size()) +
                             "-byte frame: " + e.what());
  }
}
}  // namespace detail

template <class T>
T from_frame(const Frame& frame) {
  T value{};
  from_frame(frame, value);
  return value;
}

}  // namespace taskwire::runtime
