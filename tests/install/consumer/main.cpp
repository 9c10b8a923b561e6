// Uses the installed headers and library: an inproc round trip through the public API.
#include <taskwire/taskwire.hpp>

#include <cstdio>

int main() {
  using namespace taskwire;
  runtime::Context ctx;
  comm::Registry registry(ctx);
  comm::register_builtin_backends(registry);
  ctx.start();
  auto listener = comm::listen(registry, "inproc://consumer", [](comm::CommPtr c) {
    c->async_read([c](error_code ec, runtime::Message m) {
      if (!ec) c->async_write(std::move(m), [c](error_code) {});
    });
  });
  auto c = comm::connect(registry, "inproc://consumer");
  comm::write_sync(c, runtime::Message({runtime::to_frame(std::string("ping"))}));
  auto reply = runtime::from_frame<std::string>(comm::read_sync(c).frames.at(0));
  std::printf("consumer got '%s'\n", reply.c_str());
  return reply == "ping" ? 0 : 1;
}
