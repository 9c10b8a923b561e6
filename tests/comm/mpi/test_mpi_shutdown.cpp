// Shutdown with messages in flight: even ranks write a burst to the next rank and shut MPI
// down at once; the burst is flushed before their CLOSE and GOODBYE, so odd ranks read all of
// it in order, then closed. Its own binary: an MpiEnvironment shuts down once per process.
#include "tests/comm/mpi/mpi_fixture.hpp"
#include "tests/comm/test_server.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <future>

using namespace taskwire;
using namespace taskwire::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint32_t kCount = 300;
const runtime::Frame kBig = pattern_frame((4u << 20) + 3, 9);  // shared by every big message

runtime::Message nth(std::uint32_t i) {
  auto head = runtime::Frame::copy_of(&i, 4);
  if (i % 3 == 0) return runtime::Message({head, kBig});
  return runtime::Message({head});
}

struct Reader {
  std::uint32_t in_order = 0;
  bool intact = true;
  error_code end;
  std::promise<void> done;
};

void read_all(comm::CommPtr c, std::shared_ptr<Reader> r) {
  c->async_read([c, r](error_code ec, runtime::Message m) {
    if (ec) {
      r->end = ec;
      return r->done.set_value();
    }
    std::uint32_t seq = ~0u;
    if (!m.frames.empty() && m.frames[0].size() == 4) std::memcpy(&seq, m.frames[0].data(), 4);
    if (seq != r->in_order) r->intact = false;
    if (seq % 3 == 0 && (m.frames.size() != 2 || !has_pattern(m.frames[1], kBig.size(), 9)))
      r->intact = false;
    ++r->in_order;
    read_all(c, r);
  });
}

}  // namespace

TEST_CASE("mpi: shutdown with messages in flight flushes them, then the peer reads closed",
          "[mpi]") {
  auto& env = mpi_env();
  auto& fx = fixture();
  if (env.size() % 2) {
    WARN("needs an even number of ranks");
    return;
  }
  const bool sender = env.rank() % 2 == 0;
  const int partner = sender ? env.rank() + 1 : env.rank() - 1;
  auto reader = std::make_shared<Reader>();
  auto read_done = reader->done.get_future();
  std::unique_ptr<comm::Listener> listener;
  if (!sender)
    listener = comm::listen(fx.registry(), fmt::format("mpi://{}:12", env.rank()),
                            [reader](comm::CommPtr c) { read_all(c, reader); });
  env.barrier();

  if (sender) {
    auto c = comm::connect(fx.registry(), fmt::format("mpi://{}:12", partner), 20s);
    auto ok = std::make_shared<std::atomic<std::uint32_t>>(0);
    for (std::uint32_t i = 0; i < kCount; ++i)
      c->async_write(nth(i), [ok](error_code ec) {
        if (!ec) ++*ok;
      });
    const auto t0 = Clock::now();
    env.shutdown();  // right away, with most of the burst still queued
    INFO("shutdown took " << std::chrono::duration<double>(Clock::now() - t0).count() << " s");
    CHECK(Clock::now() - t0 < 60s);
    const auto deadline = Clock::now() + 10s;
    while (*ok < kCount && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
    CHECK(ok->load() == kCount);
    CHECK(c->closed());
  } else {
    REQUIRE(read_done.wait_for(60s) == std::future_status::ready);
    CHECK(reader->in_order == kCount);
    CHECK(reader->intact);
    CHECK(reader->end == comm::errc::closed);
    // The partner said GOODBYE (or is saying it): connecting to it fails, promptly.
    const auto t0 = Clock::now();
    CHECK_THROWS_AS(comm::connect(fx.registry(), fmt::format("mpi://{}:12", partner), 2s),
                    comm::CommError);
    CHECK(Clock::now() - t0 < 5s);
    listener.reset();
    env.shutdown();
  }
  CHECK(env.is_shut_down());
}
