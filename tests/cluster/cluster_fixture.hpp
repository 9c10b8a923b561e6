#pragma once
// The cluster tests' cluster: a scheduler and workers on the selected scheme (--scheme), all
// in this process.
#include "tests/comm/fixture.hpp"

#include <taskwire/client/client.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace taskwire::test {

// A scheduler and `nworkers` workers on the selected scheme, all in this process.
struct Cluster {
  SchemeFixture& fx = fixture();
  std::unique_ptr<scheduler::SchedulerServer> scheduler;
  std::vector<std::unique_ptr<worker::Worker>> workers;
  std::string address;

  explicit Cluster(int nworkers, scheduler::SchedulerServerOptions options = {}) {
    options.listen = {fx.listen_address()};
    scheduler = std::make_unique<scheduler::SchedulerServer>(fx.registry(), options);
    scheduler->start();
    address = scheduler->addresses().at(0);
    for (int i = 0; i < nworkers; ++i) add_worker();
  }
  ~Cluster() {
    for (auto& w : workers) w->stop();
    scheduler->stop();
  }
  /// Named "w<i>", i counting the workers added so far; `configure` may change its options.
  worker::Worker& add_worker(int nthreads = 1,
                             const std::function<void(worker::WorkerOptions&)>& configure = {}) {
    worker::WorkerOptions o;
    o.scheduler_address = address;
    o.nthreads = nthreads;
    o.name = fmt::format("w{}", workers.size());  // not "w" + to_string: GCC 12's -Wrestrict
                                                  // misfires on it where it is inlined
    if (configure) configure(o);
    workers.push_back(std::make_unique<worker::Worker>(fx.context(), fx.registry(), o));
    workers.back()->start();
    return *workers.back();
  }
  std::size_t scheduler_tasks() {
    return scheduler->inspect([](const scheduler::SchedulerState& s) { return s.task_count(); });
  }
  /// The workers the scheduler lists as holding `key`'s result.
  std::vector<std::string> who_has(const std::string& key) {
    return scheduler->inspect([&](const scheduler::SchedulerState& s) { return s.who_has(key); });
  }
  std::size_t scheduler_workers() {
    return scheduler->inspect([](const scheduler::SchedulerState& s) { return s.workers().size(); });
  }
  bool wait_workers(std::size_t n) {
    return wait_until([&] { return scheduler_workers() >= n; });
  }
  /// Whether `done` holds within 10 s, asked every 10 ms: for what the scheduler learns from
  /// messages in flight (well under a second here); the bound only ends a broken test.
  static bool wait_until(const std::function<bool()>& done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }
};

/// A cluster of `n` workers, every one connected, and a client of it.
struct Connected {
  explicit Connected(int n) : cl(n), client(cl.fx.registry(), cl.address) {
    REQUIRE(cl.wait_workers(static_cast<std::size_t>(n)));
  }
  Cluster cl;
  Client client;
};

}  // namespace taskwire::test
