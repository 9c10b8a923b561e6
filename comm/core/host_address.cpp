#include <taskwire/comm/core/host_address.hpp>

#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/error.hpp>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <unistd.h>
#include <netinet/in.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <set>

namespace taskwire::comm {

bool is_wildcard_host(std::string_view host) {
  if (host == "0.0.0.0") return true;
  in6_addr v6{};
  const std::string text(host);
  return inet_pton(AF_INET6, text.c_str(), &v6) == 1 && IN6_IS_ADDR_UNSPECIFIED(&v6);
}

namespace {

using InterfaceList = std::unique_ptr<ifaddrs, void (*)(ifaddrs*)>;

InterfaceList list_interfaces() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    throw CommError(make_error_code(errc::io), "cannot list the network interfaces");
  return {list, freeifaddrs};
}

// The IP address of an entry as text; empty for other families.
std::string address_text(const ifaddrs& i) {
  char text[INET6_ADDRSTRLEN] = {};
  if (!i.ifa_addr) return {};
  if (i.ifa_addr->sa_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(i.ifa_addr);
    if (inet_ntop(AF_INET, &a->sin_addr, text, sizeof text)) return text;
  } else if (i.ifa_addr->sa_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(i.ifa_addr);
    if (inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text)) return text;
  }
  return {};
}

bool is_v4(const ifaddrs& i) { return i.ifa_addr && i.ifa_addr->sa_family == AF_INET; }

}  // namespace

std::string interface_address(const std::string& name) {
  const auto list = list_interfaces();
  std::string v6;
  std::set<std::string> names;
  for (const ifaddrs* i = list.get(); i; i = i->ifa_next) {
    const auto text = address_text(*i);
    if (text.empty()) continue;
    names.insert(i->ifa_name);
    if (name != i->ifa_name) continue;
    if (is_v4(*i)) return text;
    if (v6.empty()) v6 = text;
  }
  if (!v6.empty()) return v6;
  throw CommError(make_error_code(errc::bad_address),
                  fmt::format("network interface '{}' has no IP address or does not exist "
                              "(interfaces with one: {})",
                              name, fmt::join(names, ", ")));
}

std::string host_name_address() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0)
    throw CommError(make_error_code(errc::io), "cannot read this machine's host name");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(name, nullptr, &hints, &found);
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(rc == 0 ? found : nullptr, freeaddrinfo);
  for (const addrinfo* a = list.get(); a; a = a->ai_next) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
    if ((ntohl(v4->sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    if (inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text)) return text;
  }
  throw CommError(make_error_code(errc::bad_address),
                  fmt::format("host name '{}' resolves to no IPv4 address other than loopback; "
                              "give the address to listen on explicitly",
                              name));
}

std::string with_host(const std::string& address, const std::string& host) {
  const auto a = Address::parse(address);
  auto hp = HostPort::parse(a.location);
  hp.host = host;
  return a.scheme + "://" + hp.str();
}

}  // namespace taskwire::comm
