// What the scheduler server does with an operation number it does not handle: a retired one
// (who_has, 4) is refused like any unknown number, by closing that peer's comm only.
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/batch.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>

using namespace taskwire;
using namespace std::chrono_literals;

namespace {

// A one-operation batch with an arbitrary op code and no body, laid out as BatchWriter does.
runtime::Message raw_op(std::uint8_t code) {
  std::vector<char> head;
  runtime::wire::Writer(head) << std::uint8_t{1} << code << std::uint32_t{0} << std::uint32_t{0}
                              << std::uint8_t{0};
  return runtime::Message({runtime::Frame(std::move(head))});
}

}  // namespace

TEST_CASE("scheduler server: a retired operation closes that peer's comm and no other",
          "[scheduler][server]") {
  runtime::Context ctx(runtime::Config::from_env(), 1);
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  scheduler::SchedulerServerOptions options;
  options.listen = {"inproc://auto"};
  auto server = std::make_unique<scheduler::SchedulerServer>(registry, options);
  server->start();
  const std::string address = server->addresses().at(0);

  auto stale = comm::connect(registry, address, 10s);
  comm::write_sync(stale, raw_op(4), 10s);  // 4 was who_has
  try {
    comm::read_sync(stale, 10s);
    FAIL("the scheduler answered a retired operation");
  } catch (const comm::CommError& e) {
    INFO(e.what());
    CHECK(e.code() != comm::make_error_code(comm::errc::timeout));  // closed by the server
  }

  // Another peer is still served: a client's shutdown is answered with shutting_down.
  auto client = comm::connect(registry, address, 10s);
  runtime::BatchWriter request;
  request.add(protocol::Op::shutdown, protocol::Empty{});
  comm::write_sync(client, request.take(), 10s);
  bool shutting_down = false;
  runtime::for_each_op(comm::read_sync(client, 10s), [&](runtime::OpReader& r) {
    r.body<protocol::Empty>();
    shutting_down = shutting_down || r.op() == protocol::Op::shutting_down;
  });
  CHECK(shutting_down);
  server.reset();  // while the context runs: its destructor waits for the strand
  ctx.stop();
}
