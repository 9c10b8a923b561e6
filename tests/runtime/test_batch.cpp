#include <taskwire/runtime/batch.hpp>

#include <catch2/catch.hpp>

using namespace taskwire;
using namespace taskwire::runtime;
using protocol::Op;

namespace {
// A graph of two tasks, a release and a task_finished with `finished_frames` payload frames.
void add_sample_ops(BatchWriter& w, std::vector<Frame> finished_frames) {
  protocol::UpdateGraph g;
  g.tasks.push_back({"inc-1", "inc", {{protocol::ArgSpec::frame, 0, ""}}, {}, 3, 0});
  g.tasks.push_back({"inc-2", "inc", {{protocol::ArgSpec::dependency, 0, "inc-1"}}, {"inc-1"}, 4, 1});
  g.wanted = {"inc-2"};
  w.add(Op::update_graph, g, {to_frame(41)});
  w.add(Op::release_keys, protocol::Keys{{"a", "b"}});
  w.add(Op::task_finished, protocol::TaskFinished{"k", 8, 0.5}, std::move(finished_frames));
}
}  // namespace

TEST_CASE("batch: several operations with payload frames round-trip in order", "[runtime]") {
  BatchWriter w;
  add_sample_ops(w, {to_frame(std::string("x")), to_frame(2)});
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

TEST_CASE("batch: every protocol struct round-trips through the operation header", "[runtime]") {
  protocol::ComputeTask ct;
  ct.spec = {"sum-1", "sum", {{protocol::ArgSpec::frame, 2, ""}, {protocol::ArgSpec::dependency, 0, "a"}},
             {"a", "b"}, -7, 3};
  ct.who_has = {{"a", {"mpi://1", "tcp://h:2"}}, {"b", {}}};
  BatchWriter w;
  w.add(Op::compute_task, ct);
  w.add(Op::register_worker, protocol::RegisterWorker{"w1", "mpi://3", 4});
  w.add(Op::key_in_memory, protocol::KeyInMemory{"k", 1ull << 40, {"mpi://1"}});
  w.add(Op::data_reply, protocol::DataReply{99, {"x", ""}, {"gone"}});
  w.add(Op::worker_died, protocol::WorkerDied{"tcp://h:5", "w5", "exit code 3", {"a", "b"}});
  w.add(Op::missing_data, protocol::MissingData{"t", "d", "mpi://2"});
  w.add(Op::key_erred, protocol::KeyErred{"k2", "dependency 'm' failed: boom", "m", "boom",
                                          "std::out_of_range", "w7", "tcp://h:7"});
  w.add(Op::task_erred, protocol::TaskErred{"t2", "it threw", "std::bad_alloc"});
  w.add(Op::worker_refused, protocol::WorkerRefused{"the name 'w1' is already taken"});
  w.add(Op::get_data, protocol::GetData{12, {"p", "q"}});
  w.add(Op::key_cancelled, protocol::KeysCancelled{{"r"}, "cancelled by client c13"});
  w.add(Op::shutdown, protocol::Empty{});
  int n = 0;
  for_each_op(w.take(), [&](OpReader& r) {
    ++n;
    switch (r.op()) {
      case Op::compute_task: {
        auto got = r.body<protocol::ComputeTask>();
        CHECK(got.spec.key == "sum-1");
        CHECK(got.spec.function == "sum");
        REQUIRE(got.spec.args.size() == 2);
        CHECK(got.spec.args[0].kind == protocol::ArgSpec::frame);
        CHECK(got.spec.args[0].frame_index == 2);
        CHECK(got.spec.args[1].kind == protocol::ArgSpec::dependency);
        CHECK(got.spec.args[1].key == "a");
        CHECK(got.spec.dependencies == std::vector<std::string>{"a", "b"});
        CHECK(got.spec.priority == -7);
        CHECK(got.spec.retries == 3);
        CHECK(got.who_has == ct.who_has);
        break;
      }
      case Op::register_worker: {
        auto got = r.body<protocol::RegisterWorker>();
        CHECK(got.name == "w1");
        CHECK(got.address == "mpi://3");
        CHECK(got.nthreads == 4);
        break;
      }
      case Op::key_in_memory: {
        auto got = r.body<protocol::KeyInMemory>();
        CHECK(got.nbytes == 1ull << 40);
        CHECK(got.holders == std::vector<std::string>{"mpi://1"});
        break;
      }
      case Op::data_reply: {
        auto got = r.body<protocol::DataReply>();
        CHECK(got.request_id == 99);
        CHECK(got.keys == std::vector<std::string>{"x", ""});
        CHECK(got.missing == std::vector<std::string>{"gone"});
        break;
      }
      case Op::worker_died: {
        auto got = r.body<protocol::WorkerDied>();
        CHECK(got.address == "tcp://h:5");
        CHECK(got.name == "w5");
        CHECK(got.cause == "exit code 3");
        CHECK(got.running == std::vector<std::string>{"a", "b"});
        break;
      }
      case Op::missing_data:
        CHECK(r.body<protocol::MissingData>().from == "mpi://2");
        break;
      case Op::key_erred: {
        auto got = r.body<protocol::KeyErred>();
        CHECK(got.key == "k2");
        CHECK(got.message == "dependency 'm' failed: boom");
        CHECK(got.blamed_key == "m");
        CHECK(got.cause == "boom");
        CHECK(got.exception_type == "std::out_of_range");
        CHECK(got.worker == "w7");
        CHECK(got.worker_address == "tcp://h:7");
        break;
      }
      case Op::worker_refused:
        CHECK(r.body<protocol::WorkerRefused>().reason == "the name 'w1' is already taken");
        break;
      case Op::task_erred: {
        auto got = r.body<protocol::TaskErred>();
        CHECK(got.key == "t2");
        CHECK(got.message == "it threw");
        CHECK(got.exception_type == "std::bad_alloc");
        break;
      }
      case Op::get_data: {
        auto got = r.body<protocol::GetData>();
        CHECK(got.request_id == 12);
        CHECK(got.keys == std::vector<std::string>{"p", "q"});
        break;
      }
      case Op::key_cancelled: {
        auto got = r.body<protocol::KeysCancelled>();
        CHECK(got.keys == std::vector<std::string>{"r"});
        CHECK(got.reason == "cancelled by client c13");
        break;
      }
      default:
        CHECK(r.op() == Op::shutdown);
        r.body<protocol::Empty>();
    }
  });
  CHECK(n == 12);
}

namespace {
// Reads each operation's body as the type its code names (what a server does).
void read_all(const Message& m) {
  for_each_op(m, [](OpReader& r) {
    switch (r.op()) {
      case Op::update_graph: r.body<protocol::UpdateGraph>(); break;
      case Op::release_keys: r.body<protocol::Keys>(); break;
      case Op::task_finished: r.body<protocol::TaskFinished>(); break;
      default: throw std::runtime_error("unexpected operation");
    }
  });
}
}  // namespace

TEST_CASE("batch: cut or corrupted headers are errors, never crashes", "[runtime]") {
  BatchWriter w;
  add_sample_ops(w, {});
  const auto m = w.take();
  REQUIRE_NOTHROW(read_all(m));
  const std::string head(m.frames[0].view());
  // Every strict prefix ends inside some field: always a SerializationError.
  for (std::size_t n = 0; n < head.size(); ++n) {
    Message cut({Frame(std::string_view(head.data(), n)), m.frames[1]});
    INFO("header cut to " << n << " of " << head.size() << " bytes");
    CHECK_THROWS_AS(read_all(cut), SerializationError);
  }
  // Any one byte set to 0xff: parsed, or refused as malformed (or as an operation the
  // reader does not expect), never a crash (ASan runs this too) or another exception.
  std::size_t refused = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    std::string bad = head;
    bad[i] = '\xff';
    Message corrupt({Frame(std::string_view(bad)), m.frames[1]});
    try {
      read_all(corrupt);
    } catch (const SerializationError&) {
      ++refused;
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "unexpected operation");
      ++refused;
    }
  }
  CHECK(refused > 0);
  // A string claiming 2^40 bytes.
  std::string lying;
  lying += '\x01';
  lying += static_cast<char>(Op::release_keys);
  lying.append(8, '\0');                       // first, count
  const std::uint64_t one = 1, huge = std::uint64_t{1} << 40;
  lying.append(reinterpret_cast<const char*>(&one), 8);   // one key
  lying.append(reinterpret_cast<const char*>(&huge), 8);  // of 2^40 bytes
  lying += "abc";
  CHECK_THROWS_WITH(read_all(Message({Frame(std::string_view(lying))})),
                    Catch::Contains("count of 1099511627776"));
}

TEST_CASE("protocol: operation numbers are the wire format and stay as they were", "[runtime]") {
  // A peer of the same protocol version may be an older build: renumbering breaks it silently.
  CHECK(static_cast<int>(Op::update_graph) == 1);
  CHECK(static_cast<int>(Op::cancel_keys) == 3);
  CHECK(static_cast<int>(Op::shutdown) == 5);  // 4 was who_has, retired
  CHECK(static_cast<int>(Op::key_in_memory) == 20);
  CHECK(static_cast<int>(Op::shutting_down) == 24);  // 23 was who_has_reply, retired
  CHECK(static_cast<int>(Op::key_lost) == 25);
  CHECK(static_cast<int>(Op::register_worker) == 40);
  CHECK(static_cast<int>(Op::worker_closing) == 45);
  CHECK(static_cast<int>(Op::threads_busy) == 46);
  CHECK(static_cast<int>(Op::worker_died) == 50);
  CHECK(static_cast<int>(Op::compute_task) == 60);
  CHECK(static_cast<int>(Op::worker_refused) == 63);
  CHECK(static_cast<int>(Op::free_processing) == 66);
  CHECK(static_cast<int>(Op::get_data) == 80);
  CHECK(static_cast<int>(Op::data_reply) == 81);
}
