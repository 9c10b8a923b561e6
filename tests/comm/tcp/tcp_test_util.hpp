#pragma once
// Helpers for the TCP tests: a started Context with its Registry, bounded reads and writes,
// a plain blocking POSIX socket for speaking raw bytes at a listener, log capture, and the
// allocation watch of alloc_watch.cpp. Every wait here is bounded.
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/comm/core/framing.hpp>
#include <taskwire/runtime/context.hpp>

#include <catch2/catch.hpp>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace taskwire::test {

using namespace std::chrono_literals;
using comm::CommPtr;
using runtime::Frame;
using runtime::Message;

inline constexpr std::chrono::milliseconds kWait{10'000};

/// The largest single allocation (operator new) since the last reset; see alloc_watch.cpp.
namespace alloc_watch {
void reset() noexcept;
std::size_t largest() noexcept;
}  // namespace alloc_watch

/// A started Context (threads) with every built-in backend registered.
struct Env {
  explicit Env(runtime::Config config = runtime::Config::from_env(), unsigned threads = 1)
      : ctx(std::move(config), threads), registry(ctx) {
    comm::register_builtin_backends(registry);
    ctx.start();
  }
  static runtime::Config with_max_frame_bytes(std::uint64_t n) {
    auto c = runtime::Config::from_env();
    c.limits.max_frame_bytes = n;
    return c;
  }
  runtime::Context ctx;
  comm::Registry registry;
};

inline Message make_message(std::initializer_list<std::string_view> frames) {
  std::vector<Frame> v;
  for (auto f : frames) v.emplace_back(f);
  return Message(std::move(v));
}

inline std::string text(const Frame& f) { return std::string(f.view()); }

struct ReadResult {
  error_code ec;
  Message message;
};

/// async_read, waiting at most `timeout` (REQUIREd).
inline ReadResult read_within(const CommPtr& c, std::chrono::milliseconds timeout = kWait) {
  auto done = std::make_shared<std::promise<ReadResult>>();
  auto fut = done->get_future();
  c->async_read([done](error_code ec, Message m) { done->set_value({ec, std::move(m)}); });
  REQUIRE(fut.wait_for(timeout) == std::future_status::ready);
  return fut.get();
}

inline error_code write_within(const CommPtr& c, Message m,
                               std::chrono::milliseconds timeout = kWait) {
  auto done = std::make_shared<std::promise<error_code>>();
  auto fut = done->get_future();
  c->async_write(std::move(m), [done](error_code ec) { done->set_value(ec); });
  REQUIRE(fut.wait_for(timeout) == std::future_status::ready);
  return fut.get();
}

/// A thread-safe queue whose pop waits at most a timeout.
template <class T>
class WaitQueue {
 public:
  void push(T v) {
    {
      std::lock_guard lock(mu_);
      items_.push_back(std::move(v));
    }
    cv_.notify_all();
  }
  /// REQUIREs an item within `timeout`.
  T pop(std::chrono::milliseconds timeout = kWait) {
    std::unique_lock lock(mu_);
    REQUIRE(cv_.wait_for(lock, timeout, [this] { return !items_.empty(); }));
    T v = std::move(items_.front());
    items_.pop_front();
    return v;
  }
  std::size_t size() {
    std::lock_guard lock(mu_);
    return items_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;
};

inline std::uint16_t port_of(const std::string& address) {
  return comm::HostPort::parse(comm::Address::parse(address).location).port;
}

/// The wire bytes of `m`: prefix then frames.
inline std::string encode(const Message& m) {
  std::vector<char> prefix;
  comm::encode_prefix(m, prefix);
  std::string out(prefix.begin(), prefix.end());
  for (const auto& f : m.frames) out.append(f.view());
  return out;
}

inline std::string u64_le(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

/// A plain blocking IPv4 socket with 10 s send/receive timeouts: a peer that speaks raw bytes.
class RawSocket {
 public:
  explicit RawSocket(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~RawSocket() { close(); }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  /// "tcp://127.0.0.1:PORT" as the listener sees this socket.
  std::string address() const {
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    return "tcp://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  }
  void send_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      REQUIRE(n > 0);
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }
  int fd() const noexcept { return fd_; }
  /// Reads until EOF, an error or the receive timeout; returns how many bytes came.
  std::size_t drain() {
    char buf[4096];
    std::size_t total = 0;
    for (;;) {
      const auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return total;
      total += static_cast<std::size_t>(n);
    }
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

/// Captures what is logged through spdlog's default logger while alive.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()), sink_(std::make_shared<Sink>()) {
    auto logger = std::make_shared<spdlog::logger>("test", sink_);
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  /// Waits (bounded) for a warning that contains every one of `parts`.
  bool has_warning(std::initializer_list<std::string_view> parts,
                   std::chrono::milliseconds timeout = kWait) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    do {
      for (const auto& line : sink_->warnings()) {
        bool all = true;
        for (auto p : parts) all = all && line.find(p) != std::string::npos;
        if (all) return true;
      }
      std::this_thread::sleep_for(5ms);
    } while (std::chrono::steady_clock::now() < deadline);
    for (const auto& line : sink_->warnings()) UNSCOPED_INFO("logged: " << line);
    return false;
  }

 private:
  class Sink final : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::vector<std::string> warnings() {
      std::lock_guard lock(base_sink<std::mutex>::mutex_);
      return warnings_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      if (msg.level >= spdlog::level::warn)
        warnings_.emplace_back(msg.payload.data(), msg.payload.size());
    }
    void flush_() override {}

   private:
    std::vector<std::string> warnings_;
  };

  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<Sink> sink_;
};

/// Resident set size of this process in bytes (Linux).
std::size_t resident_bytes();

}  // namespace taskwire::test
