#pragma once
// Raw blocking-socket baseline: the floor any TCP comm layer is compared against.
// Messages are an 8-byte little-endian length then the bytes; TCP_NODELAY on both ends.
#include <cstdint>
#include <string>
#include <vector>

namespace taskwire::bench {

class RawTcpSocket {
 public:
  static RawTcpSocket connect(const std::string& host, std::uint16_t port);
  /// Connects to "HOST:PORT" (an IPv4 address), as RawTcpAcceptor::contact() gives it.
  static RawTcpSocket connect(const std::string& contact);
  explicit RawTcpSocket(int fd) : fd_(fd) {}
  RawTcpSocket(RawTcpSocket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  RawTcpSocket& operator=(RawTcpSocket&&) = delete;
  ~RawTcpSocket();
  void send_message(const std::vector<char>& bytes);
  /// Returns false on orderly EOF.
  bool recv_message(std::vector<char>& bytes);
  /// Serves a ping-pong: sends every message back until the peer closes.
  void echo_until_closed();

 private:
  int fd_;
};

/// A listening socket on `host` (an IPv4 address) with an ephemeral port.
class RawTcpAcceptor {
 public:
  explicit RawTcpAcceptor(const std::string& host = "127.0.0.1");
  ~RawTcpAcceptor();
  std::uint16_t port() const { return port_; }
  /// "HOST:PORT", for RawTcpSocket::connect(contact).
  std::string contact() const { return host_ + ":" + std::to_string(port_); }
  RawTcpSocket accept();

 private:
  std::string host_;
  int fd_;
  std::uint16_t port_;
};

}  // namespace taskwire::bench
