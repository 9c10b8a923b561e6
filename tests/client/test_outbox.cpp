// Outbox: a client's queued operations as messages under the comm limits, in order.
#include <taskwire/client/outbox.hpp>
#include <taskwire/comm/core/framing.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace taskwire;
using client::Outbox;

TEST_CASE("outbox: operations past the frame limit start the next message, in order", "[client]") {
  runtime::Limits limits;
  limits.max_frames = 8;
  Outbox out(limits);
  for (int i = 0; i < 5; ++i) {
    std::vector<runtime::Frame> payload(3, runtime::Frame(std::string("x")));
    out.add(protocol::Op::update_graph, protocol::Keys{{fmt::format("k{}", i)}}, payload,
            {fmt::format("k{}", i)});
  }
  out.add(protocol::Op::release_keys, protocol::Keys{{"r"}});
  auto messages = out.take();
  CHECK(out.empty());
  REQUIRE(messages.size() == 3);  // 2 + 2 + 1 operations of 3 frames, the release with the last
  std::vector<std::string> order;
  for (const auto& m : messages) {
    CHECK(comm::check_limits(m.message, limits).empty());
    order.insert(order.end(), m.carried_keys.begin(), m.carried_keys.end());
    runtime::for_each_op(m.message, [&](runtime::OpReader& r) {
      auto keys = r.body<protocol::Keys>().keys;
      if (r.op() == protocol::Op::update_graph) CHECK(r.frames().size() == 3);
      else CHECK(keys == std::vector<std::string>{"r"});
    });
  }
  CHECK(order == std::vector<std::string>{"k0", "k1", "k2", "k3", "k4"});
}

TEST_CASE("outbox: an operation alone past the limits is a message of its own", "[client]") {
  runtime::Limits limits;
  limits.max_frames = 4;
  Outbox out(limits);
  out.add(protocol::Op::cancel_keys, protocol::CancelKeys{{"a"}, false});
  out.add(protocol::Op::update_graph, protocol::Keys{{"big"}},
          std::vector<runtime::Frame>(10, runtime::Frame(std::string("y"))), {"big"});
  out.add(protocol::Op::cancel_keys, protocol::CancelKeys{{"b"}, false});
  auto messages = out.take();
  REQUIRE(messages.size() == 3);
  CHECK(messages[0].carried_keys.empty());
  CHECK(messages[1].carried_keys == std::vector<std::string>{"big"});
  CHECK_FALSE(comm::check_limits(messages[1].message, limits).empty());  // the sender refuses it
  CHECK(comm::check_limits(messages[2].message, limits).empty());
}
