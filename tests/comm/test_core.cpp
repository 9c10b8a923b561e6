#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/comm/core/error.hpp>
#include <taskwire/comm/core/framing.hpp>

#include <boost/endian/conversion.hpp>
#include <catch2/catch.hpp>

using namespace taskwire;
using comm::errc;

TEST_CASE("core: addresses parse and format", "[core]") {
  auto a = comm::Address::parse("tcp://127.0.0.1:8786");
  CHECK(a.scheme == "tcp");
  CHECK(a.location == "127.0.0.1:8786");
  CHECK(a.str() == "tcp://127.0.0.1:8786");
  CHECK(fmt::format("{}", a) == "tcp://127.0.0.1:8786");
  CHECK(comm::Address::parse("mpi://3").location == "3");
  auto hp = comm::HostPort::parse("[::1]:0");
  CHECK(hp.host == "::1");
  CHECK(hp.port == 0);
  CHECK(hp.str() == "[::1]:0");
  CHECK(comm::HostPort::parse("localhost:65535").port == 65535);
}

TEST_CASE("core: malformed addresses are bad_address errors that say why", "[core]") {
  for (const char* bad : {"127.0.0.1:8786", "://x", "tcp://"}) {
    INFO(bad);
    try {
      comm::Address::parse(bad);
      FAIL("parsed");
    } catch (const comm::CommError& e) {
      CHECK(e.code() == errc::bad_address);
    }
  }
  CHECK_THROWS_WITH(comm::HostPort::parse("host:99999"), Catch::Contains("0..65535"));
  CHECK_THROWS_WITH(comm::HostPort::parse("host"), Catch::Contains("HOST:PORT"));
}

TEST_CASE("core: an unknown scheme names the known ones", "[core]") {
  runtime::Context ctx(runtime::Config{});
  comm::Registry reg(ctx);
  comm::register_builtin_backends(reg);
  try {
    reg.get("carrier-pigeon");
    FAIL("found");
  } catch (const comm::CommError& e) {
    CHECK(e.code() == errc::unknown_scheme);
    CHECK(std::string(e.what()).find("inproc") != std::string::npos);
    CHECK(std::string(e.what()).find("tcp") != std::string::npos);
  }
  ctx.start();
  CHECK_THROWS_WITH(comm::connect(reg, "carrier-pigeon://coop", std::chrono::seconds(1)),
                    Catch::Contains("known schemes"));
}

TEST_CASE("core: comm errors are error_codes with messages, fatal ones flagged", "[core]") {
  boost::system::error_code ec = errc::closed;
  CHECK(ec.category().name() == std::string("taskwire.comm"));
  CHECK(ec.message() == "comm closed");
  CHECK(comm::is_fatal(errc::auth));
  CHECK(comm::is_fatal(errc::version));
  CHECK_FALSE(comm::is_fatal(errc::refused));
  CHECK_FALSE(comm::is_fatal(errc::timeout));
}

TEST_CASE("core: a CommError says its sentence once", "[core]") {
  const std::string detail =
      "could not connect to tcp://127.0.0.1:1 within 1000 ms (3 attempts): last error: "
      "connection refused (nothing listens there)";
  const comm::CommError e(errc::refused, detail);
  CHECK(std::string(e.what()) == detail);  // not followed by the code's message again
  CHECK(std::string(comm::CommError(errc::closed, "").what()) == "comm closed");
}

TEST_CASE("core: a host that does not resolve is named, and not retried", "[core]") {
  runtime::Context ctx(runtime::Config{});
  comm::Registry reg(ctx);
  comm::register_builtin_backends(reg);
  ctx.start();
  const std::string address = "tcp://nosuch.invalid:8786";  // .invalid never resolves (RFC 2606)
  try {
    comm::connect(reg, address, std::chrono::seconds(5));
    FAIL("connected to " << address);
  } catch (const comm::CommError& e) {
    INFO(e.what());
    // A resolver that answers says "no such host" (fatal); one that cannot be reached makes it
    // a retried lookup failure, then a timeout whose last error is the same sentence.
    CHECK((e.code() == errc::unknown_host || e.code() == errc::timeout));
    CHECK_THAT(e.what(), Catch::Contains("cannot resolve host 'nosuch.invalid' in " + address));
    CHECK_THAT(e.what(), !Catch::Contains("malformed"));
  }
  CHECK(comm::is_fatal(errc::unknown_host));
  CHECK(comm::is_fatal(errc::wrong_role));
  CHECK_FALSE(comm::is_fatal(errc::dns_unavailable));
}

namespace {
std::vector<char> prefix(std::initializer_list<std::uint64_t> words) {
  std::vector<char> out;
  for (auto w : words) {
    auto le = boost::endian::native_to_little(w);
    auto p = reinterpret_cast<const char*>(&le);
    out.insert(out.end(), p, p + 8);
  }
  return out;
}
}  // namespace

TEST_CASE("core: the framing codec round-trips a prefix", "[core]") {
  runtime::Message m({runtime::Frame(std::string_view("abc")), runtime::Frame()});
  std::vector<char> out;
  comm::encode_prefix(m, out);
  CHECK(out == prefix({2, 3, 0}));
  std::vector<std::uint64_t> lengths;
  auto st = comm::decode_prefix(out.data(), 4, {}, lengths);
  CHECK(st.kind == comm::PrefixStatus::need_more);
  st = comm::decode_prefix(out.data(), 8, {}, lengths);
  CHECK(st.kind == comm::PrefixStatus::need_more);
  CHECK(st.bytes_needed == 24);
  st = comm::decode_prefix(out.data(), out.size(), {}, lengths);
  REQUIRE(st.kind == comm::PrefixStatus::complete);
  CHECK(lengths == std::vector<std::uint64_t>{3, 0});
}

TEST_CASE("core: the framing codec checks every limit before allocating", "[core]") {
  runtime::Limits limits;
  limits.max_frames = 4;
  limits.max_frame_bytes = 1000;
  limits.max_message_bytes = 1500;
  std::vector<std::uint64_t> lengths;
  auto too_many = prefix({1ull << 40});
  auto st = comm::decode_prefix(too_many.data(), too_many.size(), limits, lengths);
  CHECK(st.kind == comm::PrefixStatus::violation);
  CHECK_THAT(st.violation_text, Catch::Contains("frames"));
  auto huge = prefix({1, 1ull << 40});  // one frame of 1 TiB
  st = comm::decode_prefix(huge.data(), huge.size(), limits, lengths);
  CHECK(st.kind == comm::PrefixStatus::violation);
  CHECK_THAT(st.violation_text, Catch::Contains("1099511627776"));
  auto sum = prefix({2, 900, 900});
  st = comm::decode_prefix(sum.data(), sum.size(), limits, lengths);
  CHECK(st.kind == comm::PrefixStatus::violation);
  CHECK(lengths.capacity() <= 4);  // reserved at most the bounded frame count
  runtime::Message big({runtime::Frame::allocate(1001)});
  CHECK_FALSE(comm::check_limits(big, limits).empty());
  CHECK(comm::check_limits(runtime::Message({runtime::Frame::allocate(10)}), limits).empty());
}

TEST_CASE("core: a TLS record where a prefix belongs is refused as TLS, not as a frame count",
          "[core]") {
  // The first bytes of a TLS 1.2/1.3 ClientHello: handshake record, version 3.1, length 512,
  // then the ClientHello's own header.
  const std::vector<char> hello{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0x03};
  std::vector<std::uint64_t> lengths;
  auto st = comm::decode_prefix(hello.data(), hello.size(), comm::kHandshakeLimits, lengths);
  CHECK(st.kind == comm::PrefixStatus::violation);
  CHECK(st.tls_record);
  CHECK_THAT(st.violation_text, Catch::Contains("speaks TLS"));
  auto many = prefix({1ull << 40});  // an ordinary refusal says what it always said
  st = comm::decode_prefix(many.data(), many.size(), comm::kHandshakeLimits, lengths);
  CHECK_FALSE(st.tls_record);
  CHECK_THAT(st.violation_text, Catch::Contains("frames"));
}

TEST_CASE("core: the framing codec's message limit holds with byte limits near 2^64", "[core]") {
  // Found by fuzz_framing (tests/fuzz/regressions/framing/message-limit-sum-wraps): the sum
  // of the lengths wrapped, so two frames of 2^63 bytes passed a message limit of 2^63.
  runtime::Limits limits;
  limits.max_frame_bytes = 1ull << 63;
  limits.max_message_bytes = 1ull << 63;
  std::vector<std::uint64_t> lengths;
  auto wraps = prefix({2, 1ull << 63, 1ull << 63});
  auto st = comm::decode_prefix(wraps.data(), wraps.size(), limits, lengths);
  CHECK(st.kind == comm::PrefixStatus::violation);
  auto fits = prefix({2, 1ull << 62, 1ull << 62});
  st = comm::decode_prefix(fits.data(), fits.size(), limits, lengths);
  CHECK(st.kind == comm::PrefixStatus::complete);
}
