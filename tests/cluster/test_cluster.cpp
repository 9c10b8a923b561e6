// Scheduler, workers and client together in one process, over each scheme (--scheme).
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"
#include "tests/cluster/log_capture.hpp"
#include "tests/comm/fixture.hpp"

#include <taskwire/client/client.hpp>
#include <taskwire/client/client_core.hpp>  // the tests of release batching drive the core itself
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/batch.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace taskwire;
using namespace std::chrono_literals;
using test::Cluster;

TEST_CASE("cluster: submit, dependencies across workers and gather", "[cluster]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  auto a = client.submit(cluster_fns::inc, 1);
  CHECK(a.get() == 2);
  auto b = client.submit(cluster_fns::add, a, 10);
  CHECK(b.get() == 12);
  CHECK(client.submit(cluster_fns::greet, "taskwire").get() == "hello taskwire");
  // Small results come inline with key_in_memory; one above the workers' inline limit
  // (64 KiB) is fetched from its worker with get_data.
  const std::string big(100'000, 'x');
  CHECK(client.submit(cluster_fns::greet, big).get() == "hello " + big);

  // Diamond: x -> (y, z) -> w
  auto x = client.submit(cluster_fns::inc, 0);
  auto y = client.submit(cluster_fns::inc, x);
  auto z = client.submit(cluster_fns::add, x, 5);
  auto w = client.submit(cluster_fns::add, y, z);
  CHECK(w.get() == (1 + 1) + (1 + 5));

  // Fan-in over many inputs spread across both workers.
  std::vector<int> in(200);
  for (int i = 0; i < 200; ++i) in[i] = i;
  auto incs = client.map(cluster_fns::slow_inc, std::vector<int>{1, 2, 3, 4});
  auto mapped = client.map(cluster_fns::inc, in);
  auto got = client.gather(mapped);
  for (int i = 0; i < 200; ++i) CHECK(got[i] == i + 1);
  auto total = client.submit(cluster_fns::sum, std::vector<int>(got.begin(), got.end()));
  CHECK(total.get() == 200 * 201 / 2);
  CHECK(client.gather(incs) == std::vector<int>{2, 3, 4, 5});
}

TEST_CASE("cluster: a result whose only holder left before the client fetched it is computed again",
          "[cluster]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  ClientOptions options;
  options.fetch_timeout = 3s;  // the wait for news, should a fetch fail
  Client client(cl.fx.registry(), cl.address, options);
  const std::string big(100'000, 'y');  // above the inline limit: fetched from its holder
  auto f = client.submit(cluster_fns::greet, big);
  REQUIRE(f.wait_for(30s));  // in memory on one worker; the client holds no copy yet
  auto holders = [&] {
    return cl.scheduler->inspect([&](const scheduler::SchedulerState& s) { return s.who_has(f.key()); });
  };
  const auto first = holders();
  REQUIRE(first.size() == 1);
  int stopped = 0;
  for (auto& w : cl.workers)
    if (w->address() == first.front()) {
      w->stop();
      ++stopped;
    }
  REQUIRE(stopped == 1);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(f.get() == "hello " + big);  // computed again on the worker that is left
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);  // no connect retries to the gone worker
  const auto now = holders();
  REQUIRE(now.size() == 1);
  CHECK(now.front() != first.front());
  CHECK(cl.scheduler_workers() == 1);
}

TEST_CASE("cluster: a client with its own io thread serves waits from several threads at once",
          "[cluster]") {
  // Client(address) owns a one-thread context: a thread that waits runs its event loop
  // (runtime::Context::Drive) and the io thread lingers parked after each wait; other
  // threads' waits are served meanwhile (the fixture's clients share a two-thread context,
  // which no thread drives).
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.address);
  for (int i = 0; i < 200; ++i) {  // submit().get(): each submission leaves with the next wait
    auto f = client.submit(cluster_fns::inc, i);
    REQUIRE(f.wait_for(30s));
    REQUIRE(f.get() == i + 1);
  }
  const std::string big(100'000, 'z');  // fetched from its worker right after a wait
  CHECK(client.submit(cluster_fns::greet, big).get() == "hello " + big);
  auto polled = client.submit(cluster_fns::inc, 7);
  const auto t0 = std::chrono::steady_clock::now();
  while (!polled.wait_for(0ms) && std::chrono::steady_clock::now() - t0 < 10s) {
  }  // each poll runs what is ready, and never keeps the io thread from it
  CHECK(polled.wait_for(0ms));
  CHECK(polled.get() == 8);
  auto slow = client.submit(cluster_fns::slow_inc, 1);
  CHECK_FALSE(slow.wait_for(1ms));  // a wait that times out while driving
  std::atomic<int> wrong{0}, late{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto f = client.submit(cluster_fns::add, t * 1000, i);
        if (!f.wait_for(30s)) ++late;
        else if (f.get() != t * 1000 + i) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  CHECK(late == 0);
  CHECK(wrong == 0);
  REQUIRE(slow.wait_for(30s));
  CHECK(slow.get() == 2);
}

TEST_CASE("cluster: a 10 000-task graph completes", "[cluster]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  std::vector<int> in(10'000);
  for (int i = 0; i < 10'000; ++i) in[i] = i;
  auto futures = client.map(cluster_fns::inc, in);
  auto out = client.gather(futures);
  long s = 0;
  for (int v : out) s += v;
  CHECK(s == 10'000L * 10'001 / 2);
  // A chain of 200 dependent tasks.
  auto f = client.submit(cluster_fns::inc, 0);
  for (int i = 0; i < 199; ++i) f = client.submit(cluster_fns::inc, f);
  CHECK(f.get() == 200);
}

TEST_CASE("cluster: an unknown function is a task error naming it", "[cluster]") {
  Cluster cl(1);
  Client client(cl.fx.registry(), cl.address);
  auto f = client.submit_tasks({{.function = "no_such::function",
                                 .args = {runtime::to_frame(1)},
                                 .options = {.key = "mystery-1"}}})
               .at(0)
               .as<int>();
  CHECK(f.key() == "mystery-1");
  CHECK_THROWS_WITH(f.get(), Catch::Contains("no_such::function"));
}

TEST_CASE("cluster: released futures are forgotten by the scheduler", "[cluster]") {
  Cluster cl(2);
  Client client(cl.fx.registry(), cl.address);
  {
    auto a = client.submit(cluster_fns::inc, 1);
    auto b = client.submit(cluster_fns::inc, a);
    CHECK(b.get() == 3);
    CHECK(cl.scheduler_tasks() >= 1);
  }
  bool forgotten = false;
  for (int i = 0; i < 250 && !forgotten; ++i) {
    forgotten = cl.scheduler_tasks() == 0;
    if (!forgotten) std::this_thread::sleep_for(20ms);
  }
  CHECK(forgotten);
}

TEST_CASE("cluster: a release leaves with the client's next message", "[cluster]") {
  Cluster cl(1);
  auto core = client::ClientCore::connect(cl.fx.registry(), cl.address, ClientOptions{});
  core->set_release_delay(std::chrono::hours(1));  // no timer: only a next message takes it
  // The core itself, for its release delay; its key references stand in for futures.
  auto submit = [&](const std::string& key) {
    protocol::TaskSpec spec;
    spec.key = key;
    spec.function = "no_such::function";  // errs at once; the scheduler keeps it while held
    spec.args.push_back({protocol::ArgSpec::frame, 0, {}});
    return core->submit({spec}, {runtime::to_frame(1)}).at(0);
  };
  auto contains = [&](const char* key) {
    return cl.scheduler->inspect([&](const scheduler::SchedulerState& s) { return s.contains(key); });
  };
  {
    auto first = submit("first-1");
    CHECK_THROWS_AS(core->result("first-1"), TaskError);
  }
  std::this_thread::sleep_for(300ms);
  CHECK(contains("first-1"));  // released on the client, not yet told to the scheduler
  auto second = submit("second-1");
  CHECK_THROWS_AS(core->result("second-1"), TaskError);  // the scheduler has handled the
                                                         // message carrying both
  CHECK_FALSE(contains("first-1"));
  CHECK(contains("second-1"));
}

TEST_CASE("cluster: a worker joining late gets the waiting work", "[cluster]") {
  Cluster cl(0);
  Client client(cl.fx.registry(), cl.address);
  auto futures = client.map(cluster_fns::inc, std::vector<int>{1, 2, 3});
  CHECK_FALSE(futures[0].wait_for(200ms));
  cl.add_worker();
  CHECK(client.gather(futures) == std::vector<int>{2, 3, 4});
}

TEST_CASE("cluster: scatter, as_completed and cancel", "[cluster]") {
  Cluster cl(2);
  Client client(cl.fx.registry(), cl.address);
  auto parts = client.scatter_each(std::vector<int>{1, 2, 3});  // one future per element
  REQUIRE(parts.size() == 3);
  CHECK(client.submit(cluster_fns::add, parts[0], parts[2]).get() == 4);
  auto whole = client.scatter(std::string("abc"));
  CHECK(client.submit(cluster_fns::greet, whole).get() == "hello abc");
  auto fs = client.map(cluster_fns::inc, std::vector<int>{5, 6, 7});
  std::size_t yielded = 0;
  for (auto& f : client.as_completed(fs)) yielded += f.done() ? 1 : 0;
  CHECK(yielded == 3);
  auto slow = client.submit(cluster_fns::slow_inc, 1);
  auto after = client.submit(cluster_fns::slow_inc, slow);
  after.cancel();
  CHECK_THROWS_AS(after.get(), TaskError);
  CHECK_THROWS_WITH(after.get(), Catch::Contains("cancelled by client"));  // the reason travels
  CHECK_THROWS_WITH(after.get(), !Catch::Contains("cancelled: cancelled"));
}

TEST_CASE("cluster: client.shutdown() stops the scheduler and every worker", "[cluster]") {
  Cluster cl(2);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  CHECK(client.submit(cluster_fns::inc, 41).get() == 42);
  client.shutdown();
  REQUIRE(cl.scheduler->finished().wait_for(10s) == std::future_status::ready);
  for (auto& w : cl.workers) CHECK(w->wait_closed(10s));
}

TEST_CASE("cluster: a map over more inputs than one message may hold frames completes",
          "[cluster][limits]") {
  Cluster cl(2);
  Client client(cl.fx.registry(), cl.address);
  const int n = 70'000;  // past the 65 536 frames of a message: it goes as several
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i;
  auto futures = client.map(cluster_fns::inc, in);
  REQUIRE(futures.size() == in.size());
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  for (const auto& f : futures) {  // bounded: pending futures fail the test, not hang it
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    REQUIRE(f.wait_for(std::max(left, std::chrono::milliseconds(1))));
  }
  auto got = client.gather(futures);
  bool all_right = true;
  for (int i = 0; i < n; ++i) all_right = all_right && got[i] == i + 1;
  CHECK(all_right);
}

TEST_CASE("cluster: a task whose message would pass the limits fails saying why, alone",
          "[cluster][limits]") {
  Cluster cl(1);
  auto core = client::ClientCore::connect(cl.fx.registry(), cl.address, ClientOptions{});
  const std::string inc = runtime::FunctionRegistry::global().name_of(
      reinterpret_cast<const void*>(&cluster_fns::inc));
  auto spec_of = [&](std::string key, std::uint32_t nframes) {
    protocol::TaskSpec t;
    t.key = std::move(key);
    t.function = inc;
    for (std::uint32_t i = 0; i < nframes; ++i) t.args.push_back({protocol::ArgSpec::frame, i, {}});
    return t;
  };
  // Queued back to back, so usually batched into one flush with the ordinary tasks around it.
  auto before = core->submit({spec_of("before", 1)}, {runtime::to_frame(41)});
  auto huge = core->submit({spec_of("huge", 70'000)},
                           std::vector<runtime::Frame>(70'000, runtime::to_frame(1)));
  auto after = core->submit({spec_of("after", 1)}, {runtime::to_frame(1)});
  REQUIRE(core->wait("huge", 30s));
  CHECK(core->status("huge") == client::KeyStatus::erred);
  try {
    core->result("huge");
    FAIL("a task that was never sent must not have a result");
  } catch (const TaskError& e) {
    CHECK_THAT(e.what(), Catch::Contains("not sent to the scheduler") && Catch::Contains("frames"));
  }
  REQUIRE(core->wait("before", 30s));
  REQUIRE(core->wait("after", 30s));
  CHECK(runtime::from_frame<int>(core->result("before")) == 42);
  CHECK(runtime::from_frame<int>(core->result("after")) == 2);
}

TEST_CASE("cluster: the scheduler holds a spec only while its task may still run",
          "[cluster][limits]") {
  scheduler::SchedulerServerOptions options;
  options.state.max_tasks = 100;
  Cluster cl(2, options);
  Client client(cl.fx.registry(), cl.address);
  auto specs_become = [&](std::size_t n) {  // releases reach the scheduler a little later
    for (int i = 0; i < 500; ++i) {
      if (cl.scheduler->held_specs() == n) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  std::vector<int> in(50);
  for (int i = 0; i < 50; ++i) in[i] = i;
  for (int round = 0; round < 5; ++round) {
    {
      auto fs = client.map(cluster_fns::inc, in);
      CHECK(client.gather(fs).at(49) == 50);
      CHECK(cl.scheduler->held_specs() == 50);  // in memory: a lost result is computed again
    }
    CHECK(specs_become(0));  // released: forgotten
    {
      std::vector<int> too_many(150, 1);  // refused: past max_tasks
      auto refused = client.map(cluster_fns::inc, too_many);
      CHECK_THROWS_WITH(refused.at(0).get(), Catch::Contains("refused"));
      CHECK(specs_become(0));
      auto bad = client.submit(cluster_fns::fail_on, 13);  // erred for good
      CHECK_THROWS_AS(bad.get(), TaskError);
      CHECK(specs_become(0));
    }
  }
  // The same key submitted again while known: the second spec is dropped at once.
  auto core = client::ClientCore::connect(cl.fx.registry(), cl.address, ClientOptions{});
  protocol::TaskSpec t;
  t.key = "known-key";
  t.function = runtime::FunctionRegistry::global().name_of(reinterpret_cast<const void*>(&cluster_fns::inc));
  t.args.push_back({protocol::ArgSpec::frame, 0, {}});
  auto first = core->submit({t}, {runtime::to_frame(1)});
  REQUIRE(core->wait("known-key", 30s));
  auto again = core->submit({t}, {runtime::to_frame(1)});
  t.key = "after-known-key";  // messages arrive in order: once it is done, so was the above
  auto probe = core->submit({t}, {runtime::to_frame(1)});
  REQUIRE(core->wait("after-known-key", 30s));
  CHECK(cl.scheduler->held_specs() == 2);  // known-key's first spec and the probe's
  CHECK(runtime::from_frame<int>(core->result("known-key")) == 2);
}

TEST_CASE("cluster: a task's exception reaches get() with its type and the worker that ran it",
          "[cluster]") {
  Cluster cl(1);
  Client client(cl.fx.registry(), cl.address);
  auto bad = client.submit(cluster_fns::fail_on, 13);
  try {
    bad.get();
    FAIL("no exception");
  } catch (const TaskError& e) {
    CHECK(e.key() == bad.key());
    CHECK(e.exception_type() == "std::runtime_error");
    CHECK(e.worker() == "w0");
    CHECK(e.worker_address() == cl.workers[0]->address());
    CHECK(e.raised_by() == bad.key());
    CHECK(e.message() == "bad input 13");
    CHECK(std::string(e.what()) ==
          "task '" + bad.key() + "' raised std::runtime_error on worker w0: bad input 13");
  }
  auto dependent = client.submit(cluster_fns::inc, bad);
  try {
    dependent.get();
    FAIL("no exception");
  } catch (const TaskError& e) {
    CHECK(e.key() == dependent.key());
    CHECK(e.raised_by() == bad.key());
    CHECK(e.exception_type() == "std::runtime_error");
    CHECK(e.worker() == "w0");
    CHECK(std::string(e.what()) == "task '" + dependent.key() + "' failed: dependency '" +
                                       bad.key() +
                                       "' raised std::runtime_error on worker w0: bad input 13");
  }
  // Something not derived from std::exception still has its type named.
  auto odd = client.submit(cluster_fns::throw_int, 7);
  try {
    odd.get();
    FAIL("no exception");
  } catch (const TaskError& e) {
    CHECK(e.exception_type() == "int");
    CHECK_THAT(e.what(), Catch::Contains("raised int on worker w0"));
  }
  // The worker keeps serving.
  CHECK(client.submit(cluster_fns::fail_on, 12).get() == 12);
}

TEST_CASE("cluster: at debug level, task events are logged by worker and scheduler, and a failed "
          "task is a warning on its worker",
          "[cluster]") {
  test::LogCapture log(spdlog::level::debug);  // before the cluster, which logs through it
  std::string good_key, bad_key, worker_address;
  {
    Cluster cl(1);
    worker_address = cl.workers[0]->address();
    Client client(cl.fx.registry(), cl.address);
    auto good = client.submit(cluster_fns::slow_inc, 1);  // slow: on the thread pool
    CHECK(good.get() == 2);
    auto bad = client.submit(cluster_fns::fail_on, 13);
    CHECK_THROWS_AS(bad.get(), TaskError);
    good_key = good.key();
    bad_key = bad.key();
  }
  const std::string text = log.text();
  INFO(text);
  using Catch::Contains;
  const std::string good = "task '" + good_key + "' (cluster_fns::slow_inc";
  CHECK_THAT(text, Contains("[debug] worker w0: received " + good));
  CHECK_THAT(text, Contains("[debug] worker w0: " + good + ") started on the thread pool"));
  CHECK_THAT(text, Contains("[debug] worker w0: " + good + ") finished in "));
  CHECK_THAT(text, Contains("[debug] scheduler: " + good + ") placed on " + worker_address));
  CHECK_THAT(text, Contains("[debug] scheduler: task '" + good_key + "' finished on " +
                            worker_address + " in "));
  CHECK_THAT(text, Contains("[warning] worker w0: task '" + bad_key +
                            "' (cluster_fns::fail_on) raised std::runtime_error after "));
  CHECK_THAT(text, Contains(" ms: bad input 13"));
}

TEST_CASE("cluster: below debug level no task event is logged, and a failure still is",
          "[cluster]") {
  test::LogCapture log(spdlog::level::info);
  {
    Cluster cl(1);
    Client client(cl.fx.registry(), cl.address);
    CHECK(client.submit(cluster_fns::inc, 1).get() == 2);
    CHECK_THROWS_AS(client.submit(cluster_fns::fail_on, 13).get(), TaskError);
  }
  const std::string text = log.text();
  INFO(text);
  CHECK_THAT(text, !Catch::Contains("[debug]"));
  CHECK_THAT(text, Catch::Contains("raised std::runtime_error"));
}

TEST_CASE("cluster: a worker named like a live worker is refused, and a dead worker's name is free",
          "[cluster]") {
  Cluster cl(1);  // "w0"
  REQUIRE(cl.wait_workers(1));
  worker::WorkerOptions twin_options;
  twin_options.scheduler_address = cl.address;
  twin_options.name = "w0";
  worker::Worker twin(cl.fx.context(), cl.fx.registry(), twin_options);
  twin.start();
  REQUIRE(twin.wait_closed(10s));
  const auto refused = twin.close_status();
  CHECK_FALSE(refused.clean);
  CHECK_THAT(refused.reason, Catch::Contains("refused this worker") &&
                                 Catch::Contains("name 'w0' is already taken") &&
                                 Catch::Contains(cl.workers[0]->address()) &&
                                 Catch::Contains("--name"));
  CHECK(cl.scheduler_workers() == 1);
  Client client(cl.fx.registry(), cl.address);
  CHECK(client.submit(cluster_fns::inc, 1).get() == 2);  // the first one serves on

  // A worker registered as "w-gone" whose connection then breaks (a crash: no goodbye).
  auto gone = comm::connect(cl.fx.registry(), cl.address, 5000ms);
  runtime::BatchWriter hello;
  hello.add(protocol::Op::register_worker, protocol::RegisterWorker{"w-gone", "tcp://192.0.2.1:9", 1});
  comm::write_sync(gone, hello.take());
  REQUIRE(cl.wait_workers(2));
  gone->abort();
  bool noticed = false;
  for (int i = 0; i < 500 && !noticed; ++i) {
    noticed = cl.scheduler_workers() == 1;
    if (!noticed) std::this_thread::sleep_for(20ms);
  }
  REQUIRE(noticed);
  // Its restart, under the same name, is taken.
  worker::WorkerOptions restart_options = twin_options;
  restart_options.name = "w-gone";
  worker::Worker restarted(cl.fx.context(), cl.fx.registry(), restart_options);
  restarted.start();
  REQUIRE(cl.wait_workers(2));
  CHECK_FALSE(restarted.wait_closed(0ms));
  restarted.stop();
  CHECK(restarted.close_status().clean);
}
