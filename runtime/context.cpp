#include <taskwire/runtime/context.hpp>

#include <spdlog/spdlog.h>

namespace taskwire::runtime {
asio::execution_context::id UrgentWork::id;

Context::Context(Config config, unsigned threads)
    : config_(std::move(config)), nthreads_(threads ? threads : 1),
      io_(static_cast<int>(nthreads_)),
      // Registered now, the count outlives the services registered later (strands, sockets,
      // timers), whose shutdown may destroy handlers holding a token.
      urgent_(&UrgentWork::of(io_)) {}

Context::~Context() { stop(); }

void Context::start() {
  if (!threads_.empty()) return;
  if (io_.stopped()) io_.restart();
  guard_.emplace(io_.get_executor());
  for (unsigned i = 0; i < nthreads_; ++i) {
    threads_.emplace_back([this] {
      for (;;) {
        try {
          io_.run();
          return;
        } catch (const std::exception& e) {
          // A handler that throws is a bug in that handler; keep serving everyone else.
          spdlog::error("uncaught exception in an io handler: {}", e.what());
        }
      }
    });
  }
}

void Context::stop() {
  guard_.reset();
  io_.stop();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

}  // namespace taskwire::runtime
