#include <taskwire/runtime/batch.hpp>

#include <catch2/catch.hpp>

using namespace taskwire;
using namespace taskwire::runtime;
using protocol::Op;

TEST_CASE("batch: several operations with payload frames round-trip in order", "[runtime]") {
  BatchWriter w;
  protocol::UpdateGraph g;
  g.tasks.push_back({"inc-1", "inc", {{protocol::ArgSpec::frame, 0, ""}}, {}, 3, 0});
  g.tasks.push_back({"inc-2", "inc", {{protocol::ArgSpec::dependency, 0, "inc-1"}}, {"inc-1"}, 4, 1});
  g.wanted = {"inc-2"};
  w.add(Op::update_graph, g, {to_frame(41)});
  w.add(Op::release_keys, protocol::Keys{{"a", "b"}});
  w.add(Op::task_finished, protocol::TaskFinished{"k", 8, 0.5}, {to_frame(std::string("x")), to_frame(2)});
  CHECK(w.size() == 3);
  auto m = w.take();
  CHECK(w.empty());
  CHECK(m.frames.size() == 4);

  std::vector<Op> seen;
  for_each_op(m, [&](OpReader& r) {
    seen.push_back(r.op());
    if (r.op() == Op::update_graph) {
      auto got = r.body<protocol::UpdateGraph>();
      REQUIRE(got.tasks.size() == 2);
      CHECK(got.tasks[1].args[0].key == "inc-1");
      CHECK(got.tasks[1].retries == 1);
      REQUIRE(r.frames().size() == 1);
      CHECK(from_frame<int>(r.frames()[0]) == 41);
    } else if (r.op() == Op::release_keys) {
      CHECK(r.body<protocol::Keys>().keys == std::vector<std::string>{"a", "b"});
      CHECK(r.frames().empty());
    } else {
      auto tf = r.body<protocol::TaskFinished>();
      CHECK(tf.duration_s == 0.5);
      REQUIRE(r.frames().size() == 2);
      CHECK(from_frame<int>(r.frames()[1]) == 2);
    }
  });
  CHECK(seen == std::vector<Op>{Op::update_graph, Op::release_keys, Op::task_finished});
}

TEST_CASE("batch: malformed batches are SerializationErrors", "[runtime]") {
  CHECK_THROWS_AS(for_each_op(Message{}, [](OpReader&) {}), SerializationError);
  CHECK_THROWS_AS(for_each_op(Message({Frame(std::string_view("\x01\x02garbage"))}), [](OpReader& r) {
                    r.body<protocol::UpdateGraph>();
                  }),
                  SerializationError);
  BatchWriter w;
  w.add(Op::task_finished, protocol::TaskFinished{"k", 1, 0}, {to_frame(1)});
  auto m = w.take();
  m.frames.pop_back();  // the op now refers to a frame that is not there
  CHECK_THROWS_WITH(for_each_op(m, [](OpReader& r) { r.body<protocol::TaskFinished>(); }),
                    Catch::Contains("payload frames"));
}
