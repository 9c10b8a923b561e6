#pragma once
// Boost.Serialization to and from frames (binary archives, no tracking of object addresses).
// Reading never trusts the frame: a malformed or truncated frame throws
// runtime::SerializationError instead of crashing.
#include <taskwire/runtime/frame.hpp>

#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/iostreams/device/array.hpp>
#include <boost/iostreams/device/back_inserter.hpp>
#include <boost/iostreams/stream.hpp>

#include <stdexcept>
#include <string>

namespace taskwire::runtime {

struct SerializationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr unsigned kArchiveFlags =
    boost::archive::no_header | boost::archive::no_codecvt | boost::archive::no_tracking;

template <class... T>
Frame to_frame(const T&... values) {
  std::vector<char> out;
  {
    boost::iostreams::stream<boost::iostreams::back_insert_device<std::vector<char>>> os(out);
    boost::archive::binary_oarchive ar(os, kArchiveFlags);
    (ar << ... << values);
  }
  return Frame(std::move(out));
}

template <class... T>
void from_frame(const Frame& frame, T&... values) {
  try {
    boost::iostreams::stream<boost::iostreams::array_source> is(frame.data(), frame.size());
    boost::archive::binary_iarchive ar(is, kArchiveFlags);
    (ar >> ... >> values);
  } catch (const std::exception& e) {
    throw SerializationError(std::string("cannot deserialize a ") + std::to_string(frame.size()) +
                             "-byte frame: " + e.what());
  }
}

template <class T>
T from_frame(const Frame& frame) {
  T value{};
  from_frame(frame, value);
  return value;
}

}  // namespace taskwire::runtime
