#include "tests/security/auth_helpers.hpp"

#include <taskwire/comm/core/address.hpp>
#include <taskwire/runtime/raw_codec.hpp>

#include <fmt/format.h>

namespace taskwire::test {

TestRuntime::TestRuntime(const std::string& role) {
  auto config = runtime::Config::from_env();
  config.role = role;
  config.auth_token.clear();
  context = std::make_unique<runtime::Context>(config, 2);
  registry = std::make_unique<comm::Registry>(*context);
  comm::register_builtin_backends(*registry);
  context->start();
}

TestRuntime::~TestRuntime() {
  registry.reset();
  context.reset();
}

comm::HandshakeOptions TestRuntime::handshake(const std::string& role,
                                              const std::string& token) const {
  auto o = comm::HandshakeOptions::from(context->config());
  o.role = role;
  o.name = role;
  o.auth_token = token;
  return o;
}

RecordingServer::RecordingServer(TestRuntime& rt, const std::string& address,
                                 comm::ListenOptions options) {
  // Weak: the record holds the accepted comms, whose handlers lead back to these.
  options.on_reject = [weak = std::weak_ptr<Record>(record_)](error_code ec, std::string detail,
                                                            std::string peer) {
    const auto record = weak.lock();
    if (!record) return;
    std::lock_guard lock(record->mu);
    record->rejected.push_back({ec, std::move(detail), std::move(peer)});
    record->cv.notify_all();
  };
  listener_ = comm::listen(
      *rt.registry, address,
      [weak = std::weak_ptr<Record>(record_)](comm::CommPtr c) {
        const auto record = weak.lock();
        if (!record) return;
        std::lock_guard lock(record->mu);
        record->accepted.push_back(std::move(c));
        record->cv.notify_all();
      },
      std::move(options));
}

std::uint16_t RecordingServer::port() const {
  return comm::HostPort::parse(comm::Address::parse(address()).location).port;
}

bool RecordingServer::wait_rejected(std::size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(record_->mu);
  return record_->cv.wait_for(lock, timeout, [&] { return record_->rejected.size() >= n; });
}

bool RecordingServer::wait_accepted(std::size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(record_->mu);
  return record_->cv.wait_for(lock, timeout, [&] { return record_->accepted.size() >= n; });
}

std::vector<Rejected> RecordingServer::rejections() {
  std::lock_guard lock(record_->mu);
  return record_->rejected;
}

tcp::socket raw_connect(asio::io_context& io, std::uint16_t port, const std::string& source) {
  tcp::socket s(io);
  s.open(tcp::v4());
  s.bind({asio::ip::make_address(source), 0});
  s.connect({asio::ip::make_address("127.0.0.1"), port});
  return s;
}

std::string read_until_closed(tcp::socket& socket, std::size_t max) {
  std::string got;
  char buf[4096];
  error_code ec;
  while (got.size() < max) {
    const auto n = socket.read_some(asio::buffer(buf), ec);
    if (ec) break;
    got.append(buf, n);
  }
  return got;
}

void write_framed(tcp::socket& socket, const std::vector<char>& bytes) {
  std::vector<char> out;
  runtime::raw_codec::append_le(out, std::uint64_t{1});
  runtime::raw_codec::append_le(out, static_cast<std::uint64_t>(bytes.size()));
  out.insert(out.end(), bytes.begin(), bytes.end());
  asio::write(socket, asio::buffer(out));
}

std::vector<std::string> token_forms(const std::string& token) {
  std::string lower, upper;
  for (unsigned char c : token) {
    lower += fmt::format("{:02x}", c);
    upper += fmt::format("{:02X}", c);
  }
  return {token, lower, upper};
}

}  // namespace taskwire::test
