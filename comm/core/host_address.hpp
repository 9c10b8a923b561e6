#pragma once
// Choosing the address a listener advertises when it binds more than one interface (a wildcard
// such as tcp://0.0.0.0:PORT): the helpers behind dask-worker-like --host and --interface.
#include <string>
#include <string_view>

namespace taskwire::comm {

/// True for the hosts that bind every interface: 0.0.0.0, :: (and its long forms).
bool is_wildcard_host(std::string_view host);

/// The address of network interface `name` (e.g. eth0, ib0): its first IPv4 address, else its
/// first IPv6 one. Throws CommError(bad_address) naming the interfaces there are when it has
/// no address or does not exist.
std::string interface_address(const std::string& name);

/// The IPv4 address this machine's host name resolves to, loopback addresses skipped: where
/// processes on other hosts reach this one when nothing more is known. Throws
/// CommError(bad_address) naming the host when it resolves to no such address (e.g. only to
/// Debian's 127.0.1.1).
std::string host_name_address();

/// `address` (SCHEME://HOST:PORT) with HOST replaced by `host`: the scheme and port stay.
std::string with_host(const std::string& address, const std::string& host);

}  // namespace taskwire::comm
