#pragma once
// A test server for the conformance suite: listens through comm::listen, and for each
// accepted comm reads until an error, echoing or recording what it gets. Tests wait on it
// with bounded waits only.
#include "tests/comm/fixture.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace taskwire::test {

struct PeerRecord {
  std::vector<runtime::Message> messages;  // record mode only
  std::size_t count = 0;
  error_code end;
  bool ended = false;
};

struct Rejection {
  error_code code;
  std::string detail;
};

class TestServer {
 public:
  /// slow_read: reads on, each read 1 ms after the previous one (a reader slower than a
  /// writer on the same host), counting the bytes (bytes_read()).
  enum class Mode { echo, record, slow_read };

  TestServer(SchemeFixture& fx, Mode mode, comm::ListenOptions options = {});
  ~TestServer();

  std::string target() { return fx_.target(*listener_); }
  comm::Listener& listener() { return *listener_; }
  /// True once `n` accepted comms have ended; false if `timeout` passed first.
  bool wait_ended(std::size_t n, std::chrono::milliseconds timeout);
  bool wait_rejected(std::size_t n, std::chrono::milliseconds timeout);
  std::vector<PeerRecord> records();
  std::vector<Rejection> rejections();
  /// Bytes of the messages read so far, over every accepted comm.
  std::uint64_t bytes_read() const { return st_->bytes_read.load(); }

 private:
  struct State {
    Mode mode;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<PeerRecord> records;
    std::vector<comm::CommPtr> comms;
    std::vector<Rejection> rejections;
    std::size_t ended = 0;
    std::atomic<std::uint64_t> bytes_read{0};
  };
  static void serve(std::shared_ptr<State> st, comm::CommPtr c, std::size_t idx);

  SchemeFixture& fx_;
  std::shared_ptr<State> st_;
  std::unique_ptr<comm::Listener> listener_;
};

/// A frame of `n` bytes with a recognisable pattern derived from `seed`.
runtime::Frame pattern_frame(std::size_t n, unsigned seed);
bool has_pattern(const runtime::Frame& f, std::size_t n, unsigned seed);

/// Bounded blocking read/write: fail the test (REQUIRE) on timeout.
runtime::Message read_within(const comm::CommPtr& c, std::chrono::milliseconds timeout);
error_code read_error_within(const comm::CommPtr& c, std::chrono::milliseconds timeout);
void write_within(const comm::CommPtr& c, runtime::Message m, std::chrono::milliseconds timeout);

}  // namespace taskwire::test
