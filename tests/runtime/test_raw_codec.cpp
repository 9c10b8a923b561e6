// runtime/raw_codec.hpp, the one little-endian codec: fixed-width numbers at a byte position
// (framing, MPI heads), the operation headers built on it (wire_codec.hpp), and to_frame /
// from_frame of a lone number, string or vector of numbers, which skip the Boost archive but
// must write and read exactly the bytes the archive would.
#include <taskwire/runtime/large_buffer.hpp>
#include <taskwire/runtime/serialize.hpp>
#include <taskwire/runtime/wire_codec.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <map>
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

TEST_CASE("raw codec: fixed-width numbers are little-endian at any byte position", "[runtime]") {
  namespace rc = runtime::raw_codec;
  char buf[16] = {};
  rc::store_le<std::uint32_t>(buf + 1, 0x01020304u);  // unaligned on purpose
  CHECK(std::string(buf + 1, 4) == std::string("\x04\x03\x02\x01", 4));
  CHECK(rc::load_le<std::uint32_t>(buf + 1) == 0x01020304u);
  rc::store_le<std::uint64_t>(buf + 3, 0x0102030405060708ull);
  CHECK(std::string(buf + 3, 8) == std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  CHECK(rc::load_le<std::uint64_t>(buf + 3) == 0x0102030405060708ull);
  rc::store_le<std::int16_t>(buf, -2);
  CHECK(std::string(buf, 2) == std::string("\xfe\xff", 2));
  CHECK(rc::load_le<std::int16_t>(buf) == -2);
  rc::store_le(buf + 5, -0.375);
  CHECK(rc::load_le<double>(buf + 5) == -0.375);

  std::vector<char> out{'x'};
  rc::append_le<std::uint64_t>(out, 2);
  rc::append_le<std::uint32_t>(out, 0xdeadbeefu);
  REQUIRE(out.size() == 1 + 8 + 4);
  CHECK(out[0] == 'x');
  CHECK(rc::load_le<std::uint64_t>(out.data() + 1) == 2);
  CHECK(rc::load_le<std::uint32_t>(out.data() + 9) == 0xdeadbeefu);
}

namespace {
struct Sample {  // the shape of a protocol struct: numbers, strings, vectors, a map
  std::uint32_t id = 0;
  std::string name;
  std::vector<std::string> keys;
  std::vector<double> weights;
  std::map<std::string, std::vector<std::string>> where;
  bool operator==(const Sample&) const = default;
  template <class Ar>
  void serialize(Ar& ar, unsigned) { ar & id & name & keys & weights & where; }
};
}  // namespace

TEST_CASE("raw codec: an operation header round-trips, and a cut or wrong length is refused",
          "[runtime]") {
  const Sample sent{7, "w1", {"a", "", "bc"}, {0.5, -1}, {{"k", {"tcp://127.0.0.1:1"}}, {"e", {}}}};
  std::vector<char> bytes;
  runtime::wire::Writer(bytes) << sent;
  // id, the name's count and bytes: little-endian, Boost's order of fields.
  REQUIRE(bytes.size() > 4 + 8 + 2);
  CHECK(runtime::raw_codec::load_le<std::uint32_t>(bytes.data()) == 7);
  CHECK(runtime::raw_codec::load_le<std::uint64_t>(bytes.data() + 4) == 2);
  CHECK(std::string(bytes.data() + 12, 2) == "w1");

  Sample got;
  runtime::wire::Reader in(bytes.data(), bytes.size());
  in >> got;
  CHECK(got == sent);
  CHECK(in.remaining() == 0);

  // Every cut ends inside some field.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    INFO("cut to " << n << " of " << bytes.size() << " bytes");
    runtime::wire::Reader cut(bytes.data(), n);
    Sample partial;
    CHECK_THROWS_AS(cut >> partial, runtime::SerializationError);
  }
  // The name's count says 3 bytes where 2 are: the rest no longer parses.
  std::vector<char> wrong = bytes;
  runtime::raw_codec::store_le<std::uint64_t>(wrong.data() + 4, 3);
  runtime::wire::Reader lying(wrong.data(), wrong.size());
  Sample misread;
  CHECK_THROWS_AS(lying >> misread, runtime::SerializationError);
  // A count larger than the bytes left is refused before anything is allocated.
  runtime::raw_codec::store_le<std::uint64_t>(wrong.data() + 4, std::uint64_t{1} << 40);
  runtime::wire::Reader huge(wrong.data(), wrong.size());
  CHECK_THROWS_WITH(huge >> misread, Catch::Contains("count of 1099511627776"));
}
