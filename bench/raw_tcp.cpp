#include "bench/raw_tcp.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/endian/conversion.hpp>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace taskwire::bench {
namespace {

[[noreturn]] void fail(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void write_all(int fd, const char* p, std::size_t n) {
  while (n) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      fail("send");
    }
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

bool read_all(int fd, char* p, std::size_t n) {
  while (n) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k == 0) return false;
    if (k < 0) {
      if (errno == EINTR) continue;
      fail("recv");
    }
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

}  // namespace

RawTcpSocket RawTcpSocket::connect(const std::string& host, std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) fail("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
    throw std::invalid_argument("raw-tcp: not an IPv4 address: " + host);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
    ::close(fd);
    fail("connect");
  }
  set_nodelay(fd);
  return RawTcpSocket(fd);
}

RawTcpSocket RawTcpSocket::connect(const std::string& contact) {
  const auto colon = contact.rfind(':');
  if (colon == std::string::npos) throw std::invalid_argument("raw-tcp: not HOST:PORT: " + contact);
  return connect(contact.substr(0, colon), static_cast<std::uint16_t>(std::stoi(contact.substr(colon + 1))));
}

RawTcpSocket::~RawTcpSocket() {
  if (fd_ >= 0) ::close(fd_);
}

void RawTcpSocket::send_message(const std::vector<char>& bytes) {
  std::uint64_t len = boost::endian::native_to_little(std::uint64_t{bytes.size()});
  if (bytes.size() <= 4096) {  // one syscall for small messages, as a careful C program would
    char buf[8 + 4096];
    std::memcpy(buf, &len, 8);
    std::memcpy(buf + 8, bytes.data(), bytes.size());
    return write_all(fd_, buf, 8 + bytes.size());
  }
  write_all(fd_, reinterpret_cast<const char*>(&len), 8);
  write_all(fd_, bytes.data(), bytes.size());
}

bool RawTcpSocket::recv_message(std::vector<char>& bytes) {
  std::uint64_t len;
  if (!read_all(fd_, reinterpret_cast<char*>(&len), 8)) return false;
  bytes.resize(boost::endian::little_to_native(len));
  return read_all(fd_, bytes.data(), bytes.size());
}

void RawTcpSocket::echo_until_closed() {
  std::vector<char> buf;
  while (recv_message(buf)) send_message(buf);
}

RawTcpAcceptor::RawTcpAcceptor(const std::string& host) : host_(host) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) fail("socket");
  int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    ::close(fd_);
    throw std::invalid_argument("raw-tcp: not an IPv4 address: " + host);
  }
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(fd_, 16) < 0) fail("bind/listen");
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
}

RawTcpAcceptor::~RawTcpAcceptor() { ::close(fd_); }

RawTcpSocket RawTcpAcceptor::accept() {
  int fd = ::accept(fd_, nullptr, nullptr);
  if (fd < 0) fail("accept");
  set_nodelay(fd);
  return RawTcpSocket(fd);
}

}  // namespace taskwire::bench
