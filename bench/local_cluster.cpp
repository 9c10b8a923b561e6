#include "bench/local_cluster.hpp"

#include <taskwire/comm/backends.hpp>

#include <fmt/format.h>

#include <chrono>
#include <thread>

namespace taskwire::bench {

namespace {
// Looks at the scheduler's state every 5 ms until `done` holds, at most `tries` times.
template <class Done>
void wait_for_scheduler(scheduler::SchedulerServer& s, int tries, Done done) {
  for (int i = 0; i < tries && !s.inspect(done); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}
}  // namespace

comm::Registry& LocalCluster::make_registry(const char* role) {
  auto cfg = runtime::Config::from_env();
  cfg.role = role;
  contexts.push_back(std::make_unique<runtime::Context>(cfg, 1));
  if (cfg.role == "client") contexts.back()->enable_driving();
  registries.push_back(std::make_unique<comm::Registry>(*contexts.back()));
  comm::register_builtin_backends(*registries.back());
  contexts.back()->start();
  return *registries.back();
}

LocalCluster::LocalCluster(const std::string& backend, int nworkers, bool dashboard,
                           scheduler::SchedulerOptions state) {
  scheduler::SchedulerServerOptions so;
  so.state = state;
  so.listen = {backend == "tcp" ? "tcp://127.0.0.1:0" : "inproc://auto"};
  so.dashboard.enabled = dashboard;
  so.dashboard.address = "127.0.0.1:0";
  scheduler = std::make_unique<scheduler::SchedulerServer>(make_registry("scheduler"), so);
  scheduler->start();
  address = scheduler->addresses().at(0);
  for (int i = 0; i < nworkers; ++i) {
    worker::WorkerOptions wo;
    wo.scheduler_address = address;
    wo.nthreads = 1;
    wo.name = fmt::format("bench-worker-{}", i);
    wo.dashboard = dashboard;
    auto& reg = make_registry("worker");
    workers.push_back(std::make_unique<worker::Worker>(reg.context(), reg, wo));
    workers.back()->start();
  }
  // Wait until every worker has registered.
  wait_for_scheduler(*scheduler, 1000, [nworkers](const scheduler::SchedulerState& s) {
    return static_cast<int>(s.workers().size()) == nworkers;
  });
}

std::vector<std::string> LocalCluster::dashboard_urls() const {
  std::vector<std::string> urls;
  if (!scheduler->dashboard_url().empty()) urls.push_back(scheduler->dashboard_url());
  for (const auto& w : workers)
    if (!w->dashboard_url().empty()) urls.push_back(w->dashboard_url());
  return urls;
}

LocalCluster::~LocalCluster() {
  // The clients, gone by now, release their keys when the scheduler sees them leave: wait
  // for that (bounded), or workers leaving first look like the loss of data still wanted.
  wait_for_scheduler(*scheduler, 400,
                     [](const scheduler::SchedulerState& s) { return s.client_count() == 0; });
  for (auto& w : workers) w->stop();
  scheduler->stop();
  workers.clear();
  scheduler.reset();
  for (auto& c : contexts) c->stop();
}

}  // namespace taskwire::bench
