// The comm conformance suite: one set of tests, run unchanged over every scheme
// (`--scheme inproc|tcp|mpi`; ctest registers each scheme). See fixture.hpp for how the
// same tests run in one process or across MPI ranks.
#include "tests/comm/fixture.hpp"
#include "tests/comm/test_server.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <future>
#include <thread>

using namespace taskwire;
using namespace taskwire::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kWait = std::chrono::milliseconds(60'000);


runtime::Message seq_message(std::uint32_t seq) {
  return runtime::Message({runtime::Frame::copy_of(&seq, sizeof seq)});
}

std::uint32_t seq_of(const runtime::Message& m) {
  REQUIRE(m.frames.size() == 1);
  REQUIRE(m.frames[0].size() == 4);
  std::uint32_t v;
  std::memcpy(&v, m.frames[0].data(), 4);
  return v;
}

// What a connection holds beyond its comms' queues: on tcp (and tls) the kernel's socket
// buffers, at most the largest send and receive buffers autotuning gives (net.ipv4.tcp_wmem,
// tcp_rmem).
std::uint64_t kernel_buffer_bytes(const std::string& scheme) {
  if (scheme != "tcp" && scheme != "tls") return 0;  // tls rides a tcp socket too
  auto largest = [](const char* path) {
    std::ifstream in(path);
    std::uint64_t least = 0, initial = 0, most = 0;
    in >> least >> initial >> most;
    return most;
  };
  return largest("/proc/sys/net/ipv4/tcp_wmem") + largest("/proc/sys/net/ipv4/tcp_rmem");
}

}  // namespace

TEST_CASE("conformance: round trips of 0 B, 1 B, 64 KiB and 64 MiB", "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::echo);
  auto c = comm::connect(fx.registry(), server.target(), 20s);
  CHECK(c->peer().role == fx.context().config().role);

  // A message with no frames at all, then one frame of each size, then several frames.
  write_within(c, runtime::Message{}, kWait);
  CHECK(read_within(c, kWait).frames.empty());
  const std::size_t sizes[] = {0, 1, 64 * 1024, 64 * 1024 * 1024};
  unsigned seed = 0;
  for (auto n : sizes) {
    INFO("size " << n);
    write_within(c, runtime::Message({pattern_frame(n, ++seed)}), kWait);
    auto back = read_within(c, kWait);
    REQUIRE(back.frames.size() == 1);
    CHECK(has_pattern(back.frames[0], n, seed));
  }
  runtime::Message multi({pattern_frame(3, 1), pattern_frame(0, 2), pattern_frame(100'000, 3)});
  write_within(c, multi, kWait);
  auto back = read_within(c, kWait);
  REQUIRE(back.frames.size() == 3);
  CHECK(has_pattern(back.frames[0], 3, 1));
  CHECK(has_pattern(back.frames[1], 0, 2));
  CHECK(has_pattern(back.frames[2], 100'000, 3));

  c->close();
  REQUIRE(server.wait_ended(1, kWait));
  auto recs = server.records();
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].count == 2 + std::size(sizes));
  CHECK(recs[0].end == comm::errc::closed);
}

TEST_CASE("conformance: the order of 10 000 messages is kept", "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::echo);
  auto c = comm::connect(fx.registry(), server.target(), 20s);
  constexpr std::uint32_t kCount = 10'000;
  auto write_errors = std::make_shared<std::atomic<int>>(0);
  for (std::uint32_t i = 0; i < kCount; ++i)
    c->async_write(seq_message(i), [write_errors](error_code ec) {
      if (ec) ++*write_errors;
    });
  for (std::uint32_t i = 0; i < kCount; ++i) {
    auto seq = seq_of(read_within(c, kWait));
    if (seq != i) FAIL("message " << i << " arrived as " << seq);
  }
  CHECK(write_errors->load() == 0);
  c->close();
  REQUIRE(server.wait_ended(1, kWait));
  CHECK(server.records()[0].count == kCount);
}

// The scheduler writes to a worker from that worker's read handler (on the comm's strand)
// while a message it wrote from another peer's handler may still wait to run there: the
// later write must not overtake it (it did on tcp and tls: a worker got a task's later
// assignment before the earlier one).
TEST_CASE("conformance: a write made inside a read handler does not overtake an earlier "
          "write from another thread", "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::echo);
  auto c = comm::connect(fx.registry(), server.target(), 20s);
  auto ignore = [](error_code) {};
  std::promise<void> wrote;
  c->async_read([&](error_code ec, runtime::Message) {
    if (!ec) {
      std::thread other([&] { c->async_write(seq_message(1), ignore); });
      other.join();  // its write is queued now, behind this handler
      c->async_write(seq_message(2), ignore);
    }
    wrote.set_value();
  });
  write_within(c, seq_message(0), kWait);
  REQUIRE(wrote.get_future().wait_for(kWait) == std::future_status::ready);
  CHECK(seq_of(read_within(c, kWait)) == 1);
  CHECK(seq_of(read_within(c, kWait)) == 2);
  c->close();
  REQUIRE(server.wait_ended(1, kWait));
}

TEST_CASE("conformance: 64 concurrent comms between the same two endpoints", "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::echo);
  constexpr int kComms = 64;
  std::vector<std::shared_ptr<std::promise<comm::CommPtr>>> pending;
  std::vector<std::future<comm::CommPtr>> futures;
  const auto target = server.target();
  for (int i = 0; i < kComms; ++i) {
    auto p = std::make_shared<std::promise<comm::CommPtr>>();
    futures.push_back(p->get_future());
    comm::ConnectOptions opts;
    opts.timeout = 30s;
    comm::async_connect(fx.registry(), target, opts,
                        [p](error_code ec, std::string detail, comm::CommPtr c) {
                          if (ec) p->set_exception(std::make_exception_ptr(comm::CommError(ec, detail)));
                          else p->set_value(std::move(c));
                        });
  }
  std::vector<comm::CommPtr> comms;
  for (auto& f : futures) {
    REQUIRE(f.wait_for(kWait) == std::future_status::ready);
    comms.push_back(f.get());
  }
  // Interleave: all writes first, then all reads, so the comms are truly concurrent.
  for (int i = 0; i < kComms; ++i) comms[i]->async_write(seq_message(i), [](error_code) {});
  for (int i = 0; i < kComms; ++i) CHECK(seq_of(read_within(comms[i], kWait)) == std::uint32_t(i));
  for (auto& c : comms) c->close();
  REQUIRE(server.wait_ended(kComms, kWait));
  for (const auto& r : server.records()) {
    CHECK(r.count == 1);
    CHECK(r.end == comm::errc::closed);
  }
}

TEST_CASE("conformance: close() flushes queued writes, then the peer's pending read fails with closed",
          "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::record);
  auto c = comm::connect(fx.registry(), server.target(), 20s);
  for (std::uint32_t i = 0; i < 3; ++i) c->async_write(seq_message(i), [](error_code) {});
  c->async_write(runtime::Message({pattern_frame(1 << 20, 7)}), [](error_code) {});
  c->close();
  REQUIRE(server.wait_ended(1, kWait));
  auto rec = server.records().at(0);
  REQUIRE(rec.messages.size() == 4);
  for (std::uint32_t i = 0; i < 3; ++i) CHECK(seq_of(rec.messages[i]) == i);
  CHECK(has_pattern(rec.messages[3].frames.at(0), 1 << 20, 7));
  CHECK(rec.end == comm::errc::closed);

  // Locally: the comm reports closed and later operations fail with closed.
  CHECK(read_error_within(c, kWait) == comm::errc::closed);
  CHECK(c->closed());
}

TEST_CASE("conformance: abort() fails pending operations at once and ends the peer's read",
          "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::record);
  auto c = comm::connect(fx.registry(), server.target(), 20s);
  auto read_done = std::make_shared<std::promise<error_code>>();
  auto read_fut = read_done->get_future();
  c->async_read([read_done](error_code ec, runtime::Message) { read_done->set_value(ec); });
  c->abort();
  c->abort();  // idempotent
  REQUIRE(read_fut.wait_for(5s) == std::future_status::ready);
  CHECK(read_fut.get() == comm::errc::aborted);
  CHECK(c->closed());
  auto write_done = std::make_shared<std::promise<error_code>>();
  auto write_fut = write_done->get_future();
  c->async_write(seq_message(1), [write_done](error_code ec) { write_done->set_value(ec); });
  REQUIRE(write_fut.wait_for(5s) == std::future_status::ready);
  CHECK(write_fut.get());
  REQUIRE(server.wait_ended(1, kWait));
  CHECK(server.records().at(0).end);
}

TEST_CASE("conformance: a blocking read with a timeout gives up on a peer that never answers",
          "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::record);  // reads, never answers
  auto c = comm::connect(fx.registry(), server.target(), 20s);
  comm::write_sync(c, seq_message(1), 10s);
  const auto t0 = Clock::now();
  try {
    comm::read_sync(c, 200ms);
    FAIL("read_sync returned a message nobody sent");
  } catch (const comm::CommError& e) {
    INFO(e.what());
    CHECK(e.code() == comm::errc::timeout);
    CHECK(std::string(e.what()).find("within 200 ms") != std::string::npos);
    CHECK(Clock::now() - t0 < 10s);
  }
  CHECK(read_error_within(c, kWait));  // aborted: later operations fail
  CHECK(c->closed());
  REQUIRE(server.wait_ended(1, kWait));
  CHECK(server.records().at(0).messages.size() == 1);
}

TEST_CASE("conformance: connecting where nothing listens fails within the timeout, clearly",
          "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  const auto address = fx.unreachable_address();
  const auto timeout = 700ms;
  const auto t0 = Clock::now();
  try {
    comm::connect(fx.registry(), address, timeout);
    FAIL("connect to " << address << " succeeded");
  } catch (const comm::CommError& e) {
    const auto took = Clock::now() - t0;
    INFO(e.what());
    CHECK((e.code() == comm::errc::refused || e.code() == comm::errc::timeout));
    CHECK(std::string(e.what()).find(address) != std::string::npos);
    CHECK(took < timeout + 500ms);
  }
}

TEST_CASE("conformance: without retrying refusals, connecting where nothing listens fails at once",
          "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  const auto address = fx.unreachable_address();
  comm::ConnectOptions options;
  options.timeout = 5s;
  options.retry_refused = false;
  const auto t0 = Clock::now();
  try {
    comm::connect(fx.registry(), address, options);
    FAIL("connect to " << address << " succeeded");
  } catch (const comm::CommError& e) {
    const auto took = Clock::now() - t0;
    INFO(e.what());
    CHECK(e.code() != comm::errc::timeout);
    CHECK(took < 2s);  // not the 5 s of retries
  }
}

TEST_CASE("conformance: a protocol version mismatch is refused on both sides", "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::record);
  comm::ConnectOptions opts;
  opts.timeout = 20s;
  opts.handshake = comm::HandshakeOptions::from(fx.context().config());
  opts.handshake->protocol_version = comm::kProtocolVersion + 98;
  const auto t0 = Clock::now();
  try {
    comm::connect(fx.registry(), server.target(), opts);
    FAIL("a client speaking another protocol version was accepted");
  } catch (const comm::CommError& e) {
    INFO(e.what());
    CHECK(e.code() == comm::errc::version);
    CHECK(std::string(e.what()).find("version") != std::string::npos);
    CHECK(Clock::now() - t0 < 10s);  // fatal: not retried until the deadline
  }
  REQUIRE(server.wait_rejected(1, kWait));
  CHECK(server.rejections().at(0).code == comm::errc::version);
  CHECK(server.records().empty());
}

TEST_CASE("conformance: a wrong or missing auth token is refused on both sides", "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  comm::ListenOptions lopts;
  lopts.handshake = comm::HandshakeOptions::from(fx.context().config());
  lopts.handshake->auth_token = "s3cret";
  TestServer server(fx, TestServer::Mode::echo, lopts);

  for (std::string token : {"", "wrong"}) {
    comm::ConnectOptions opts;
    opts.timeout = 20s;
    opts.handshake = comm::HandshakeOptions::from(fx.context().config());
    opts.handshake->auth_token = token;
    try {
      comm::connect(fx.registry(), server.target(), opts);
      FAIL("a client with auth token '" << token << "' was accepted");
    } catch (const comm::CommError& e) {
      INFO(e.what());
      CHECK(e.code() == comm::errc::auth);
      CHECK(std::string(e.what()).find("auth token") != std::string::npos);
    }
  }
  REQUIRE(server.wait_rejected(2, kWait));
  for (const auto& r : server.rejections()) CHECK(r.code == comm::errc::auth);

  comm::ConnectOptions good;
  good.timeout = 20s;
  good.handshake = comm::HandshakeOptions::from(fx.context().config());
  good.handshake->auth_token = "s3cret";
  auto c = comm::connect(fx.registry(), server.target(), good);
  write_within(c, seq_message(42), kWait);
  CHECK(seq_of(read_within(c, kWait)) == 42);
  c->close();
  REQUIRE(server.wait_ended(1, kWait));
}

TEST_CASE("conformance: a peer of the wrong role is refused on both sides, saying whose address "
          "to give", "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  comm::ListenOptions as_worker;
  as_worker.handshake = comm::HandshakeOptions::from(fx.context().config());
  as_worker.handshake->role = "worker";
  TestServer server(fx, TestServer::Mode::echo, as_worker);

  comm::ConnectOptions to_scheduler;
  to_scheduler.timeout = 20s;
  to_scheduler.handshake = comm::HandshakeOptions::from(fx.context().config());
  to_scheduler.handshake->role = "client";
  to_scheduler.handshake->expect_role = "scheduler";
  const auto t0 = Clock::now();
  try {
    comm::connect(fx.registry(), server.target(), to_scheduler);
    FAIL("a worker was taken for a scheduler");
  } catch (const comm::CommError& e) {
    INFO(e.what());
    CHECK(e.code() == comm::errc::wrong_role);
    CHECK_THAT(e.what(), Catch::Contains("is a worker, not a scheduler: give the scheduler's "
                                         "address"));
    CHECK(Clock::now() - t0 < 10s);  // fatal: not retried until the deadline
  }
  REQUIRE(server.wait_rejected(1, kWait));
  CHECK(server.rejections().at(0).code == comm::errc::wrong_role);
  CHECK_THAT(server.rejections().at(0).detail, Catch::Contains("not a scheduler"));
  // (Not records().empty(): over mpi another rank's comm of the right role may be in already.)

  comm::ConnectOptions to_worker = to_scheduler;
  to_worker.handshake->expect_role = "worker";
  auto c = comm::connect(fx.registry(), server.target(), to_worker);
  CHECK(c->peer().role == "worker");
  c->close();
  REQUIRE(server.wait_ended(1, kWait));
}

TEST_CASE("conformance: a writer that waits for each handler queues at most the bound and one "
          "message, however slow its reader", "[conformance]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::slow_read);
  auto c = comm::connect(fx.registry(), server.target(), 20s);
  const std::uint64_t bound = fx.context().config().limits.max_queued_bytes;
  constexpr std::uint64_t kMessage = 1 << 20;
  // First a message larger than the bound: alone in the queue, it still goes through.
  const std::uint64_t first = bound + kMessage;
  // Then three times the bound, each write once the previous handler ran.
  const std::uint64_t count = 3 * bound / kMessage + 8;
  write_within(c, runtime::Message({pattern_frame(first, 1)}), kWait);
  std::uint64_t handed = first, worst = first - std::min(first, server.bytes_read());
  const auto frame = pattern_frame(kMessage, 2);  // shared by every message, never copied
  for (std::uint64_t i = 0; i < count; ++i) {
    write_within(c, runtime::Message({frame}), kWait);
    handed += kMessage;
    worst = std::max(worst, handed - std::min(handed, server.bytes_read()));
  }
  c->close();
  REQUIRE(server.wait_ended(1, kWait));
  CHECK(server.bytes_read() == handed);  // over mpi: the previous rank's writer, the same bytes
  // Over mpi the reader is another rank; tests/comm/mpi bounds that writer's memory instead.
  if (fx.scheme() == "mpi") return;
  INFO("bound " << bound << ", most written and unread " << worst);
  CHECK(worst <= bound + kMessage + kernel_buffer_bytes(fx.scheme()));
}
