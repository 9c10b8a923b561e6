#include <taskwire/comm/core/host_address.hpp>

#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/error.hpp>

#include <arpa/inet.h>
#include <ifaddrs.h>
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

std::string with_host(const std::string& address, const std::string& host) {
  const auto a = Address::parse(address);
  auto hp = HostPort::parse(a.location);
  hp.host = host;
  return a.scheme + "://" + hp.str();
}

}  // namespace taskwire::comm
