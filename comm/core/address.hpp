#pragma once
// Addresses are URLs: tcp://HOST:PORT (port 0 = any free port, IPv6 as [::1]:PORT),
// mpi://RANK (rank in the runtime's private communicator), inproc://NAME.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace taskwire::comm {

struct Address {
  std::string scheme;    ///< "tcp", "mpi", "inproc", ...
  std::string location;  ///< everything after "://"

  /// Splits "scheme://location". Throws CommError(bad_address) with the offending text.
  static Address parse(std::string_view text);
  std::string str() const { return scheme + "://" + location; }
  friend bool operator==(const Address&, const Address&) = default;
};

/// tcp locations: "host:port", "[v6]:port". Throws CommError(bad_address).
struct HostPort {
  std::string host;
  std::uint16_t port = 0;
  static HostPort parse(std::string_view location);
  std::string str() const;  ///< brackets IPv6 hosts
};

}  // namespace taskwire::comm

template <>
struct fmt::formatter<taskwire::comm::Address> : fmt::formatter<std::string_view> {
  auto format(const taskwire::comm::Address& a, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(a.str(), ctx);
  }
};
