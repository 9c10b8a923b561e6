#pragma once
// What the security tests share: a runtime (context + registry), a listener that records the
// comms it accepts and the peers it rejects, and raw TCP sockets that speak no taskwire.
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/context.hpp>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace taskwire::test {

using asio::ip::tcp;

struct TestRuntime {
  std::unique_ptr<runtime::Context> context;
  std::unique_ptr<comm::Registry> registry;
  explicit TestRuntime(const std::string& role);
  ~TestRuntime();
  comm::HandshakeOptions handshake(const std::string& role, const std::string& token) const;
};

struct Rejected {
  error_code code;
  std::string detail, peer;
};

class RecordingServer {
 public:
  RecordingServer(TestRuntime& rt, const std::string& address, comm::ListenOptions options);
  std::string address() const { return listener_->contact_address(); }
  std::uint16_t port() const;
  bool wait_rejected(std::size_t n, std::chrono::milliseconds timeout);
  bool wait_accepted(std::size_t n, std::chrono::milliseconds timeout);
  std::vector<Rejected> rejections();

 private:
  // Reached by the listener's handlers through a weak pointer: a pending handshake may still
  // report a rejection on the io thread while (or after) this server is destroyed.
  struct Record {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<comm::CommPtr> accepted;
    std::vector<Rejected> rejected;
  };
  std::shared_ptr<Record> record_ = std::make_shared<Record>();
  std::unique_ptr<comm::Listener> listener_;
};

/// A plain socket connected to 127.0.0.1:port from `source` (any 127.0.0.0/8 address).
tcp::socket raw_connect(asio::io_context& io, std::uint16_t port,
                        const std::string& source = "127.0.0.1");
/// Everything the peer sends until it closes (or `max` bytes).
std::string read_until_closed(tcp::socket& socket, std::size_t max = 64 << 10);
/// Writes `bytes` as one framed message (the stream framing of comm/core/framing.hpp).
void write_framed(tcp::socket& socket, const std::vector<char>& bytes);

/// The token's bytes, and its hex in both cases.
std::vector<std::string> token_forms(const std::string& token);

}  // namespace taskwire::test
