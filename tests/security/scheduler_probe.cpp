// Probes a real taskwire-scheduler process before authentication (scheduler_test.sh starts
// it; TASKWIRE_AUTH_TOKEN is set for both). Prints what it measured; exits 0 when the
// scheduler passed.
//   scheduler_probe bigframe ADDRESS PID
//     A raw socket announces one 8 GiB frame and sends 64 MiB of it; then the scheduler's
//     VmRSS must have grown by at most 8 MiB, and a real client must still be served.
//   scheduler_probe silent ADDRESS N SOURCES
//     N raw sockets that never speak, from SOURCES loopback addresses (127.0.0.2...), then a
//     real client, which must be served; how long it took is printed, not judged.
#include "tests/security/auth_helpers.hpp"

#include <taskwire/client/client.hpp>
#include <taskwire/comm/core/address.hpp>
#include <taskwire/runtime/raw_codec.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace taskwire;
using asio::ip::tcp;
using test::raw_connect;

namespace {

constexpr std::uint64_t kAnnounced = std::uint64_t{8} << 30;
constexpr std::size_t kSent = std::size_t{64} << 20;
constexpr long kMaxGrowthKiB = 8 << 10;

long vm_rss_kib(const std::string& pid) {
  std::ifstream status("/proc/" + pid + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  throw std::runtime_error("no VmRSS for process " + pid);
}

std::uint16_t port_of(const std::string& address) {
  return comm::HostPort::parse(comm::Address::parse(address).location).port;
}

// A real client: connects, registers, and the scheduler answers. Returns the milliseconds.
long served_client_ms(const std::string& address) {
  ClientOptions options;
  options.connect_timeout = std::chrono::seconds(20);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now() - t0)
                                 .count());
  };
  try {
    Client client(address, options);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("the client, after {} ms: {}", elapsed_ms(), e.what()));
  }
  return elapsed_ms();
}

int big_frame(const std::string& address, const std::string& pid) {
  asio::io_context io;
  const long before = vm_rss_kib(pid);
  auto s = raw_connect(io, port_of(address), "127.0.0.1");
  std::vector<char> prefix;
  runtime::raw_codec::append_le(prefix, std::uint64_t{1});
  runtime::raw_codec::append_le(prefix, kAnnounced);
  error_code ec;
  asio::write(s, asio::buffer(prefix), ec);
  const std::vector<char> chunk(1 << 20, 'x');
  std::size_t sent = 0;
  // Ends when all is sent (a scheduler that reads it) or at a reset (one that refused).
  while (!ec && sent < kSent) sent += asio::write(s, asio::buffer(chunk), ec);
  const long after = vm_rss_kib(pid);
  std::printf("announced 8 GiB, sent %zu MiB of it (%s); scheduler VmRSS %ld KiB -> %ld KiB "
              "(%+ld KiB)\n",
              sent >> 20, ec ? ec.message().c_str() : "all accepted", before, after,
              after - before);
  const long ms = served_client_ms(address);
  std::printf("then a client was served in %ld ms\n", ms);
  return after - before <= kMaxGrowthKiB ? 0 : 1;
}

int silent(const std::string& address, int n, int sources) {
  asio::io_context io;
  std::vector<tcp::socket> silent_peers;
  for (int i = 0; i < n; ++i)
    silent_peers.push_back(
        raw_connect(io, port_of(address), fmt::format("127.0.0.{}", 2 + i % sources)));
  const long ms = served_client_ms(address);
  std::printf("%d silent connections from %d addresses, then a client was served in %ld ms\n",
              n, sources, ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "bigframe" && argc == 4) return big_frame(argv[2], argv[3]);
    if (mode == "silent" && argc == 5) return silent(argv[2], std::stoi(argv[3]), std::stoi(argv[4]));
    std::fprintf(stderr, "usage: scheduler_probe bigframe ADDRESS PID | silent ADDRESS N SOURCES\n");
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
  }
  return 1;
}
