// The MPI backend's own tests, beyond the conformance suite. Run whole under
// `mpiexec.mpich -n 2` and `-n 4` (every rank runs every test; sync() keeps them in step).
#include "tests/comm/mpi/mpi_fixture.hpp"
#include "tests/comm/test_server.hpp"

#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/mpi/mpi_poll_stats.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <future>
#include <thread>

using namespace taskwire;
using namespace taskwire::test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kWait = std::chrono::milliseconds(60'000);


runtime::Message seq_message(std::uint32_t seq, std::size_t extra = 0) {
  auto f = runtime::Frame::allocate(4 + extra);
  std::memcpy(f.mutable_data(), &seq, 4);
  return runtime::Message({f});
}

std::uint32_t seq_of(const runtime::Message& m) {
  REQUIRE(m.frames.size() == 1);
  REQUIRE(m.frames[0].size() >= 4);
  std::uint32_t v;
  std::memcpy(&v, m.frames[0].data(), 4);
  return v;
}

int rank() { return mpi_env().rank(); }
int size() { return mpi_env().size(); }
int next_rank() { return (rank() + 1) % size(); }

// A Context + Registry with its own configuration (a second driver on the same poller).
struct Runtime {
  runtime::Context context;
  comm::Registry registry{context};
  explicit Runtime(runtime::Config config) : context(std::move(config), 1) {
    comm::register_builtin_backends(registry);
    context.start();
  }
  ~Runtime() { context.stop(); }
};

// Reads `count` messages in order on the comm's strand; fulfils `done` with the number read
// in order (or stops at the first error or disorder).
void read_in_order(comm::CommPtr c, std::uint32_t count, std::shared_ptr<std::promise<std::uint32_t>> done,
                   std::uint32_t next = 0) {
  if (next == count) return done->set_value(next);
  c->async_read([c, count, done, next](error_code ec, runtime::Message m) {
    std::uint32_t seq = 0;
    if (!ec && m.frames.size() == 1 && m.frames[0].size() >= 4)
      std::memcpy(&seq, m.frames[0].data(), 4);
    if (ec || seq != next) return done->set_value(next);
    read_in_order(c, count, done, next + 1);
  });
}

// How many turns of this rank's poller (each probes MPI once) with no write completing count
// as the writer being held, once writes flow: a 2 MiB message that may go moves in a few.
constexpr std::uint64_t kQuietTurns = 5000;

// Waits until the writes counted by `written` stop completing: first until `flowing` of them
// have (both ranks' pollers are moving data: a writer not yet started is not a held one),
// then until none completes while this rank's poller turns kQuietTurns times. Judged by the
// poller's turns, not by time, so a slow machine cannot pass for a held writer. Returns the
// count then, or `all` once every write completed (nothing held the writer).
std::uint32_t writes_once_held(const std::atomic<std::uint32_t>& written, std::uint32_t flowing,
                               std::uint32_t all) {
  const auto& turns = comm::mpi::poll_counters().turns;
  const auto give_up = Clock::now() + kWait;  // a liveness bound only
  while (written.load() < flowing) {
    REQUIRE(Clock::now() < give_up);
    std::this_thread::sleep_for(1ms);
  }
  std::uint32_t seen = written.load();
  std::uint64_t quiet_since = turns.load();
  while (seen < all) {
    REQUIRE(Clock::now() < give_up);  // the poller stopped turning, or the writes crawl
    std::this_thread::sleep_for(1ms);
    if (const auto now = written.load(); now != seen) {
      seen = now;
      quiet_since = turns.load();
    } else if (turns.load() - quiet_since >= kQuietTurns) {
      break;
    }
  }
  return seen;
}

}  // namespace

TEST_CASE("mpi: data races connection set-up in both directions", "[mpi]") {
  auto& fx = fixture();
  Synced synced(fx);
  constexpr std::uint32_t kToServer = 1000, kToClient = 500;
  auto& backend = fx.registry().get("mpi");
  auto server_done = std::make_shared<std::promise<std::uint32_t>>();
  auto server_fut = server_done->get_future();
  std::atomic<int> accepted{0};
  comm::CommPtr server_comm;
  std::mutex mu;
  // Raw listener and connector: no handshake, so data follows the HELLO/ACCEPT at once.
  auto listener = backend.make_listener(
      comm::Address::parse(fmt::format("mpi://{}:7", rank())), [&](comm::CommPtr c) {
        {
          std::lock_guard lock(mu);
          server_comm = c;
        }
        ++accepted;
        // Writes before reading, while the client may still be in its connect handler.
        for (std::uint32_t i = 0; i < kToClient; ++i) c->async_write(seq_message(i, i % 3 ? 0 : 3000), [](error_code) {});
        read_in_order(c, kToServer, server_done);
      },
      {});
  listener->start();
  fx.sync();

  auto client_done = std::make_shared<std::promise<std::uint32_t>>();
  auto client_fut = client_done->get_future();
  auto connected = std::make_shared<std::promise<comm::CommPtr>>();
  auto connected_fut = connected->get_future();
  auto connector = backend.make_connector();
  connector->async_connect(comm::Address::parse(fmt::format("mpi://{}:7", next_rank())),
                           [&, connected, client_done](error_code ec, comm::CommPtr c) {
                             if (ec) return connected->set_value(nullptr);
                             for (std::uint32_t i = 0; i < kToServer; ++i)
                               c->async_write(seq_message(i, i % 5 ? 0 : 20000), [](error_code) {});
                             read_in_order(c, kToClient, client_done);
                             connected->set_value(c);
                           });
  REQUIRE(connected_fut.wait_for(kWait) == std::future_status::ready);
  auto client = connected_fut.get();
  REQUIRE(client);
  REQUIRE(client_fut.wait_for(kWait) == std::future_status::ready);
  CHECK(client_fut.get() == kToClient);
  REQUIRE(server_fut.wait_for(kWait) == std::future_status::ready);
  CHECK(server_fut.get() == kToServer);
  CHECK(accepted == 1);
  client->close();
  std::lock_guard lock(mu);
  CHECK(read_error_within(server_comm, kWait) == comm::errc::closed);
  server_comm->close();
}

TEST_CASE("mpi: self-connections, several listeners per rank, bad addresses", "[mpi]") {
  auto& fx = fixture();
  Synced synced(fx);
  auto echo_forever = [](comm::CommPtr c) {
    auto loop = std::make_shared<std::function<void()>>();
    *loop = [c, loop] {
      c->async_read([c, loop](error_code ec, runtime::Message m) {
        if (ec) {
          *loop = nullptr;
          return;
        }
        c->async_write(std::move(m), [](error_code) {});
        (*loop)();
      });
    };
    (*loop)();
  };
  auto l1 = comm::listen(fx.registry(), fmt::format("mpi://{}:1", rank()), echo_forever);
  auto l2 = comm::listen(fx.registry(), fmt::format("mpi://{}:2", rank()), echo_forever);
  CHECK(l1->contact_address() == fmt::format("mpi://{}:1", rank()));
  for (auto* l : {l1.get(), l2.get()}) {
    auto c = comm::connect(fx.registry(), l->contact_address(), 20s);  // this very rank
    write_within(c, seq_message(11, 70'000), kWait);
    CHECK(seq_of(read_within(c, kWait)) == 11);
    c->close();
  }

  SECTION("a port in use") {
    try {
      auto l3 = comm::listen(fx.registry(), fmt::format("mpi://{}:1", rank()), echo_forever);
      FAIL("listened twice on one port");
    } catch (const comm::CommError& e) {
      CHECK(std::string(e.what()).find("in use") != std::string::npos);
    }
  }
  SECTION("another rank's address") {
    if (size() > 1) {
      try {
        auto l3 = comm::listen(fx.registry(), fmt::format("mpi://{}", next_rank()), echo_forever);
        FAIL("listened on another rank's address");
      } catch (const comm::CommError& e) {
        CHECK(e.code() == comm::errc::bad_address);
        CHECK(std::string(e.what()).find("this process is rank") != std::string::npos);
      }
    }
  }
  SECTION("a rank outside the job, a malformed address: fail at once") {
    for (auto address : {fmt::format("mpi://{}", size() + 3), std::string("mpi://x:1"),
                         std::string("mpi://1:")}) {
      const auto t0 = Clock::now();
      try {
        comm::connect(fx.registry(), address, 5s);
        FAIL("connected to " << address);
      } catch (const comm::CommError& e) {
        CHECK(e.code() == comm::errc::bad_address);
        CHECK(Clock::now() - t0 < 2s);
      }
    }
  }
}

TEST_CASE("mpi: every rank exchanges with every rank at once", "[mpi]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::echo);
  fx.sync();
  const auto t0 = Clock::now();
  std::vector<comm::CommPtr> comms;
  for (int r = 0; r < size(); ++r)
    comms.push_back(comm::connect(fx.registry(), fmt::format("mpi://{}", r), 30s));
  constexpr std::uint32_t kPerPeer = 300;
  std::vector<std::shared_ptr<std::promise<std::uint32_t>>> done;
  std::vector<std::future<std::uint32_t>> futs;
  for (auto& c : comms) {
    done.push_back(std::make_shared<std::promise<std::uint32_t>>());
    futs.push_back(done.back()->get_future());
    read_in_order(c, kPerPeer, done.back());
  }
  // Everything written at once: small messages with some 256 KiB ones mixed in.
  for (std::uint32_t i = 0; i < kPerPeer; ++i)
    for (auto& c : comms) c->async_write(seq_message(i, i % 50 == 0 ? 256 * 1024 : 60), [](error_code) {});
  for (auto& f : futs) {
    REQUIRE(f.wait_for(kWait) == std::future_status::ready);
    CHECK(f.get() == kPerPeer);
  }
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  UNSCOPED_INFO("rank " << rank() << " of " << size() << " took " << took << " s");
  for (auto& c : comms) c->close();
  REQUIRE(server.wait_ended(static_cast<std::size_t>(size()), kWait));
}

TEST_CASE("mpi: the poll counters count turns, sleeps and what ended them", "[mpi]") {
  auto& fx = fixture();
  Synced synced(fx);
  TestServer server(fx, TestServer::Mode::echo);
  fx.sync();
  auto& counters = comm::mpi::poll_counters();
  const auto turns = counters.turns.load(), sleeps = counters.sleeps.load();
  auto c = comm::connect(fx.registry(), fmt::format("mpi://{}", (rank() + 1) % size()), 30s);
  auto done = std::make_shared<std::promise<std::uint32_t>>();
  auto fut = done->get_future();
  read_in_order(c, 20, done);
  for (std::uint32_t i = 0; i < 20; ++i) c->async_write(seq_message(i, 60), [](error_code) {});
  REQUIRE(fut.wait_for(kWait) == std::future_status::ready);
  CHECK(counters.turns.load() > turns);
  // Idle now: the poller goes to sleep within its policy's windows (milliseconds); bounded.
  for (int i = 0; i < 1000 && counters.sleeps.load() == sleeps; ++i)
    std::this_thread::sleep_for(10ms);
  CHECK(counters.sleeps.load() > sleeps);
  const auto turns_now = counters.turns.load();
  const auto metrics = comm::mpi::poll_metrics();  // a snapshot of the same counters
  CHECK(metrics[0].value >= turns_now);
  CHECK(std::string(metrics[1].name) == "mpi_poll_sleeps_total");
  c->close();
  REQUIRE(server.wait_ended(1, kWait));
}

TEST_CASE("mpi: a message above the chunk limit arrives intact (chunks of 1000 B)", "[mpi]") {
  auto& fx = fixture();
  Synced synced(fx);
  auto config = fx.context().config();
  config.mpi.max_chunk_bytes = 1000;
  Runtime small(config);  // its own Context: a second poll driver on the rank's one poller
  auto echo = [](comm::CommPtr c) {
    c->async_read([c](error_code ec, runtime::Message m) {
      if (!ec) c->async_write(std::move(m), [c](error_code) {});
    });
  };
  auto l = comm::listen(small.registry, fmt::format("mpi://{}:9", rank()), echo);
  fx.sync();
  auto c = comm::connect(small.registry, fmt::format("mpi://{}:9", next_rank()), 20s);
  const std::size_t sizes[] = {100, (1u << 20) + 17, 0, 40 * 1024, 16 * 1024, 1000, 1001, 999};
  std::vector<runtime::Frame> frames;
  for (unsigned i = 0; i < std::size(sizes); ++i) frames.push_back(pattern_frame(sizes[i], i + 1));
  write_within(c, runtime::Message(frames), kWait);
  auto back = read_within(c, kWait);
  REQUIRE(back.frames.size() == std::size(sizes));
  for (unsigned i = 0; i < std::size(sizes); ++i) {
    INFO("frame " << i << " of " << sizes[i] << " bytes");
    CHECK(has_pattern(back.frames[i], sizes[i], i + 1));
  }
  c->close();
  fx.sync();
}

TEST_CASE("mpi: a message over the receiver's limits aborts that comm with protocol", "[mpi]") {
  auto& fx = fixture();
  Synced synced(fx);
  auto config = fx.context().config();
  config.limits.max_frame_bytes = 50'000;
  Runtime strict(config);
  auto got = std::make_shared<std::promise<error_code>>();
  auto got_fut = got->get_future();
  auto l = comm::listen(strict.registry, fmt::format("mpi://{}:10", rank()),
                        [got](comm::CommPtr c) {
                          c->async_read([c, got](error_code ec, runtime::Message) {
                            got->set_value(ec);
                          });
                        });
  fx.sync();
  auto c = comm::connect(fx.registry(), fmt::format("mpi://{}:10", next_rank()), 20s);
  write_within(c, runtime::Message({pattern_frame(60'000, 3)}), kWait);
  REQUIRE(got_fut.wait_for(kWait) == std::future_status::ready);
  CHECK(got_fut.get() == comm::errc::protocol);
  CHECK(read_error_within(c, kWait) == comm::errc::closed);  // the receiver aborted
  fx.sync();
}

TEST_CASE("mpi: a reader that lags holds the sender back instead of buffering without bound",
          "[mpi]") {
  auto& fx = fixture();
  Synced synced(fx);
  constexpr std::uint32_t kCount = 100;  // 2 MiB each: 200 MiB, over the 64 MiB unread cap
  auto accepted = std::make_shared<std::promise<comm::CommPtr>>();
  auto accepted_fut = accepted->get_future();
  auto l = comm::listen(fx.registry(), fmt::format("mpi://{}:13", rank()),
                        [accepted](comm::CommPtr c) { accepted->set_value(c); });
  fx.sync();
  auto c = comm::connect(fx.registry(), fmt::format("mpi://{}:13", next_rank()), 20s);
  auto written = std::make_shared<std::atomic<std::uint32_t>>(0);
  for (std::uint32_t i = 0; i < kCount; ++i)
    c->async_write(seq_message(i, 2u << 20), [written](error_code ec) {
      if (!ec) ++*written;
    });
  REQUIRE(accepted_fut.wait_for(kWait) == std::future_status::ready);
  auto server = accepted_fut.get();
  // Nobody reads yet: the writes stop completing (all of them would, unbounded), past a
  // quarter of the bound's worth (64 MiB of 2 MiB messages: 32) that must go first.
  const std::uint32_t held_at = writes_once_held(*written, 8, kCount);
  INFO("writes completed while nobody read: " << held_at);
  CHECK(held_at < kCount / 2);
  fx.sync();
  auto done = std::make_shared<std::promise<std::uint32_t>>();
  auto fut = done->get_future();
  read_in_order(server, kCount, done);
  REQUIRE(fut.wait_for(kWait) == std::future_status::ready);
  CHECK(fut.get() == kCount);
  const auto deadline = Clock::now() + 10s;
  while (written->load() < kCount && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  CHECK(written->load() == kCount);
  c->close();
  CHECK(read_error_within(server, kWait) == comm::errc::closed);
  fx.sync();
}

TEST_CASE("mpi: 3 GiB in one frame, in 1 GiB chunks and in one large-count message",
          "[.][large]") {
  auto& fx = fixture();
  Synced synced(fx);
  const std::size_t n = std::size_t{3} << 30;
  for (std::uint64_t chunk : {std::uint64_t{1} << 30, std::uint64_t{4} << 30}) {
    auto config = fx.context().config();
    config.mpi.max_chunk_bytes = chunk;
    Runtime rt(config);
    auto got = std::make_shared<std::promise<bool>>();
    auto got_fut = got->get_future();
    auto l = comm::listen(rt.registry, fmt::format("mpi://{}:11", rank()),
                          [got](comm::CommPtr c) {
                            c->async_read([c, got](error_code ec, runtime::Message m) {
                              got->set_value(!ec && m.frames.size() == 1 &&
                                             has_pattern(m.frames[0], std::size_t{3} << 30, 5));
                              c->close();
                            });
                          });
    fx.sync();
    const auto t0 = Clock::now();
    if (rank() == 0) {  // one direction only: 3 GiB on each side is enough memory
      auto c = comm::connect(rt.registry, fmt::format("mpi://{}:11", next_rank()), 20s);
      write_within(c, runtime::Message({pattern_frame(n, 5)}), 600'000ms);
      c->close();
    }
    if (rank() == 1 % size()) {
      REQUIRE(got_fut.wait_for(600s) == std::future_status::ready);
      CHECK(got_fut.get());
      WARN("3 GiB with chunks of " << chunk << " B took "
           << std::chrono::duration<double>(Clock::now() - t0).count() << " s");
    }
    fx.sync();
  }
}
