#pragma once
// Boost.Serialization to and from frames (binary archives, no tracking of object addresses).
// Reading never trusts the frame: a malformed or truncated frame throws
// runtime::SerializationError instead of crashing. A type that cannot be sent fails to compile
// with one message naming it and the fix (see sendable.hpp).
#include <taskwire/runtime/byte_buffers.hpp>
#include <taskwire/runtime/frame.hpp>
#include <taskwire/runtime/raw_codec.hpp>
#include <taskwire/runtime/sendable.hpp>

#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <memory>
#include <stdexcept>
#include <string>

namespace taskwire::runtime {

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
}  // namespace detail

namespace detail {
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
  if constexpr (sizeof...(T) == 1 && (raw_codec::handles<T> && ...)) {
    auto frame = Frame::allocate((raw_codec::encoded_size(values) + ...));
    (raw_codec::encode(values, frame.mutable_data()), ...);
    return frame;
  }
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
  if constexpr (sizeof...(T) == 1 && (raw_codec::handles<T> && ...)) {
    if (!(raw_codec::decode(frame.data(), frame.size(), values) && ...))
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
