// Live values across a cluster (--scheme): a worker decodes a value it holds at most once for
// all the tasks there that read it, a task's result is read in place by the tasks of its
// worker, and clients receive results as before. Block's serialize() counts decodes.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"
#include "tests/cluster/log_capture.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace taskwire;
using test::Cluster;

namespace live_cluster {

std::atomic<int> decodes{0};
std::atomic<int> copies{0};

struct Block {
  std::vector<double> data;
  Block() = default;
  explicit Block(std::size_t n) : data(n) {
    for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<double>(i) + 0.25;
  }
  Block(const Block& o) : data(o.data) { ++copies; }
  Block(Block&&) noexcept = default;
  Block& operator=(const Block&) = delete;
  Block& operator=(Block&&) noexcept = default;
  bool operator==(const Block& o) const { return data == o.data; }
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & data;
    if constexpr (Archive::is_loading::value) ++decodes;
  }
};

Block make_block(std::size_t n) { return Block(n); }
double element(const Block& b, std::size_t i) { return b.data.at(i); }
// As element, once `after` (a task on the same worker) is done: see the peer test.
double element_after(const Block& b, int after, std::size_t i) { return b.data.at(i) + after; }
double negate_copy(Block b, std::size_t i) {
  b.data.at(i) = -b.data.at(i);
  return b.data.at(i);
}

void reset() {
  decodes = 0;
  copies = 0;
}

}  // namespace live_cluster

TASKWIRE_REGISTER(live_cluster::make_block);
TASKWIRE_REGISTER(live_cluster::element);
TASKWIRE_REGISTER(live_cluster::element_after);
TASKWIRE_REGISTER(live_cluster::negate_copy);

using live_cluster::Block;

TEST_CASE("live values: a task's result is read in place by its worker's tasks, never decoded",
          "[cluster][live]") {
  Cluster cl(1);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);
  live_cluster::reset();
  auto block = client.submit(live_cluster::make_block, std::size_t{1} << 16);
  std::vector<Future<double>> reads;
  for (std::size_t i = 0; i < 40; ++i)
    reads.push_back(client.submit(live_cluster::element, block, i * 1000));
  const auto got = client.gather(reads);
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == double(i * 1000) + 0.25);
  CHECK(live_cluster::decodes == 0);
  CHECK(live_cluster::copies == 0);
  // A by-value parameter gets its own copy, and the held value stays as it was.
  CHECK(client.submit(live_cluster::negate_copy, block, std::size_t{7}).get() == -7.25);
  CHECK(live_cluster::copies == 1);
  CHECK(client.submit(live_cluster::element, block, std::size_t{7}).get() == 7.25);
  CHECK(live_cluster::decodes == 0);
}

TEST_CASE("live values: scattered data is decoded once on its worker for all its readers",
          "[cluster][live]") {
  Cluster cl(1);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);
  auto block = client.scatter(Block(1 << 15));
  live_cluster::reset();
  std::vector<Future<double>> reads;
  for (std::size_t i = 0; i < 40; ++i)
    reads.push_back(client.submit(live_cluster::element, block, i * 100));
  const auto got = client.gather(reads);
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == double(i * 100) + 0.25);
  CHECK(live_cluster::decodes == 1);
  // The worker now holds it live: its memory counts the object, not the bytes too.
  const auto counts = cl.workers[0]->data().counts();
  CHECK(counts.serialized_bytes == 0);
  CHECK(counts.live_bytes >= (1u << 15) * sizeof(double));
}

TEST_CASE("live values: a value fetched from a peer is decoded once for its readers there",
          "[cluster][live]") {
  // Without assign ahead, so that the 30 readers reach w1 together when the gate opens: with
  // it, the first few are sent ahead, run, and w1 drops the fetched copy before the rest
  // arrive and fetch it again (a second decode, right but not what this test is about).
  scheduler::SchedulerServerOptions options;
  options.state.assign_ahead = 0;
  Cluster cl(2, options);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  live_cluster::reset();
  auto block = client.submit({.workers = {"w0"}}, live_cluster::make_block, std::size_t{1} << 15);
  REQUIRE(block.wait_for(std::chrono::seconds(60)));
  // The readers wait on w1 for a task held there, so that they all need the fetched value at
  // once (a replica is dropped once no task waiting there needs it).
  const std::string gate = "live-fetch-" + cl.address;
  auto token = client.submit({.workers = {"w1"}}, cluster_fns::gated, gate, 0);
  REQUIRE(cluster_fns::entered(gate));
  std::vector<Future<double>> reads;
  for (std::size_t i = 0; i < 30; ++i)
    reads.push_back(client.submit({.workers = {"w1"}}, live_cluster::element_after, block, token,
                                  i * 1000));
  // Submissions are asynchronous: the gate opens once the scheduler has every reader, or the
  // late ones reach w1 after it dropped the copy the first ones used, and fetch it again.
  REQUIRE(cl.wait_until([&] { return cl.scheduler_tasks() == reads.size() + 2; }));
  cluster_fns::open_gate(gate);
  const auto got = client.gather(reads);
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == double(i * 1000) + 0.25);
  CHECK(live_cluster::decodes == 1);  // on w1; w0 holds its own result live
  const auto who_ran = cl.scheduler->inspect(
      [&](const scheduler::SchedulerState& s) { return s.who_has(reads.front().key()); });
  REQUIRE(who_ran.size() == 1);
  CHECK(who_ran[0] == cl.workers[1]->address());
}

TEST_CASE("live values: clients receive results and scattered data as they were",
          "[cluster][live]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  auto made = client.submit(live_cluster::make_block, std::size_t{5000});
  CHECK(made.get() == Block(5000));
  const Block sent(3000);
  auto scattered = client.scatter(sent);
  CHECK(scattered.get() == sent);
  // Through a task that reads it first (so that its worker holds it live), and back.
  CHECK(client.submit(live_cluster::element, scattered, std::size_t{2999}).get() == 2999.25);
  CHECK(scattered.get() == sent);
  CHECK(client.submit(cluster_fns::greet, std::string("live")).get() == "hello live");
}

// A worker serializes all that one get_data asks for before it replies, beside the live values
// it keeps: a client asks for at most kFetchBatchBytes of results at a time, so gathering all
// of a worker's results adds at most about that much to its memory, not their whole size.
TEST_CASE("live values: a client gathers a worker's big results in requests of a bounded size",
          "[cluster][live]") {
  test::LogCapture log(spdlog::level::debug);  // before the cluster, which logs through it
  Cluster cl(1);
  REQUIRE(cl.wait_workers(1));
  Client client(cl.fx.registry(), cl.address);
  const std::size_t doubles = (std::size_t{10} << 20) / sizeof(double);  // 10 MiB each
  std::vector<Future<Block>> made;
  for (std::size_t i = 0; i < 3; ++i)
    made.push_back(client.submit(live_cluster::make_block, doubles + i));
  client.wait(made);
  const auto got = client.gather(made);
  REQUIRE(got.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(got[i] == Block(doubles + i));
  const std::string text = log.text();
  std::size_t requests = 0, single = 0;
  for (std::size_t at = text.find("get_data from"); at != std::string::npos;
       at = text.find("get_data from", at + 1)) {
    ++requests;
    if (text.compare(text.find("sends ", at), 16, "sends 1 value(s)") == 0) ++single;
  }
  CHECK(requests == 3);  // 10 MiB + 10 MiB is past the bound: one result per request
  CHECK(single == 3);
}
