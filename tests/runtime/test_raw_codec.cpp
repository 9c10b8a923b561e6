// runtime/raw_codec.hpp: to_frame/from_frame of a lone number, string or vector of numbers
// skip the Boost archive but must write and read exactly the bytes the archive would.
#include <taskwire/runtime/large_buffer.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace taskwire;

namespace {

template <class T>
std::string boost_bytes(const T& value) {
  std::ostringstream os;
  {
    boost::archive::binary_oarchive ar(os, runtime::kArchiveFlags);
    ar << value;
  }
  return os.str();
}

template <class T>
T boost_read(const runtime::Frame& f) {
  std::istringstream is(std::string(f.view()));
  boost::archive::binary_iarchive ar(is, runtime::kArchiveFlags);
  T value{};
  ar >> value;
  return value;
}

// Same bytes as the archive, both ways, and the value survives either reader.
template <class T>
void check_same_as_boost(const T& value) {
  static_assert(runtime::raw_codec::handles<T>);
  const auto frame = runtime::to_frame(value);
  const auto expected = boost_bytes(value);
  CHECK(std::string(frame.view()) == expected);
  CHECK(runtime::from_frame<T>(runtime::Frame(std::string_view(expected))) == value);
  CHECK(boost_read<T>(frame) == value);
}

}  // namespace

TEST_CASE("raw codec: numbers, strings and vectors of numbers are Boost's bytes", "[runtime]") {
  check_same_as_boost(0);
  check_same_as_boost(-42L);
  check_same_as_boost(std::numeric_limits<std::uint64_t>::max());
  check_same_as_boost(std::int8_t{-3});
  check_same_as_boost('x');
  check_same_as_boost(2.5);
  check_same_as_boost(-1.25f);
  check_same_as_boost(true);
  check_same_as_boost(false);
  check_same_as_boost(std::string());
  check_same_as_boost(std::string("hello, \0world", 13));
  check_same_as_boost(std::vector<long>{});
  check_same_as_boost(std::vector<long>{1, -2, 3});
  check_same_as_boost(std::vector<std::uint8_t>{0, 1, 255});
  check_same_as_boost(std::vector<double>(1000, 0.5));
}

TEST_CASE("raw codec: types it does not handle still go through Boost", "[runtime]") {
  STATIC_REQUIRE_FALSE(runtime::raw_codec::handles<std::vector<bool>>);
  STATIC_REQUIRE_FALSE(runtime::raw_codec::handles<std::vector<std::string>>);
  STATIC_REQUIRE_FALSE(runtime::raw_codec::handles<std::vector<std::vector<long>>>);
  using Buffer = std::vector<float, runtime::BufferAllocator<float>>;
  STATIC_REQUIRE_FALSE(runtime::raw_codec::handles<Buffer>);
  const std::vector<bool> bits{true, false, true};
  CHECK(runtime::from_frame<std::vector<bool>>(runtime::to_frame(bits)) == bits);
  const Buffer floats{1.f, 2.f};
  CHECK(runtime::from_frame<Buffer>(runtime::to_frame(floats)) == floats);
}

TEST_CASE("raw codec: short or lying frames are SerializationErrors", "[runtime]") {
  const auto eight = runtime::to_frame(7L);
  auto cut = runtime::Frame::copy_of(eight.data(), 7);
  CHECK_THROWS_AS(runtime::from_frame<long>(cut), runtime::SerializationError);
  CHECK_THROWS_AS(runtime::from_frame<bool>(runtime::Frame::copy_of("", 0)),
                  runtime::SerializationError);
  // A count of 2^40 elements over 16 bytes: refused before anything is allocated.
  std::string lying(16, '\0');
  const std::uint64_t count = std::uint64_t{1} << 40;
  std::memcpy(lying.data(), &count, sizeof count);
  CHECK_THROWS_AS(runtime::from_frame<std::vector<double>>(runtime::Frame(std::string_view(lying))),
                  runtime::SerializationError);
  CHECK_THROWS_AS(runtime::from_frame<std::string>(runtime::Frame(std::string_view(lying))),
                  runtime::SerializationError);
  // A bool byte other than 0 or 1 reads as true, never as an invalid bool.
  CHECK(runtime::from_frame<bool>(runtime::Frame(std::string_view("\x02", 1))) == true);
}
