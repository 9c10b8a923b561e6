#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/error.hpp>

#include <charconv>

namespace taskwire::comm {

Address Address::parse(std::string_view text) {
  auto sep = text.find("://");
  if (sep == std::string_view::npos || sep == 0)
    throw CommError(make_error_code(errc::bad_address),
                    fmt::format("'{}' is not an address: expected SCHEME://LOCATION, e.g. "
                                "tcp://127.0.0.1:8786, mpi://0 or inproc://name",
                                text));
  Address a{std::string(text.substr(0, sep)), std::string(text.substr(sep + 3))};
  if (a.location.empty())
    throw CommError(make_error_code(errc::bad_address),
                    fmt::format("'{}' has an empty location after '://'", text));
  return a;
}

HostPort HostPort::parse(std::string_view loc) {
  HostPort hp;
  std::string_view port;
  if (!loc.empty() && loc.front() == '[') {
    auto close = loc.find(']');
    if (close == std::string_view::npos || close + 1 >= loc.size() || loc[close + 1] != ':')
      throw CommError(make_error_code(errc::bad_address),
                      fmt::format("'{}': expected [IPV6]:PORT", loc));
    hp.host = std::string(loc.substr(1, close - 1));
    port = loc.substr(close + 2);
  } else {
    auto colon = loc.rfind(':');
    if (colon == std::string_view::npos || colon == 0)
      throw CommError(make_error_code(errc::bad_address),
                      fmt::format("'{}': expected HOST:PORT (port 0 picks a free port)", loc));
    hp.host = std::string(loc.substr(0, colon));
    port = loc.substr(colon + 1);
  }
  unsigned value = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || p != port.data() + port.size() || port.empty() || value > 65535)
    throw CommError(make_error_code(errc::bad_address),
                    fmt::format("'{}': port '{}' is not a number in 0..65535", loc, port));
  hp.port = static_cast<std::uint16_t>(value);
  return hp;
}

std::string HostPort::str() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

}  // namespace taskwire::comm
