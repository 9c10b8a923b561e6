#include "bench/local_cluster.hpp"

#include <taskwire/comm/backends.hpp>

#include <fmt/format.h>

#include <chrono>
#include <thread>

namespace taskwire::bench {

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
  for (int i = 0; i < 1000; ++i) {
    auto n = scheduler->inspect([](const scheduler::SchedulerState& s) { return s.workers().size(); });
    if (static_cast<int>(n) == nworkers) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
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
  for (int i = 0; i < 400; ++i) {
    if (scheduler->inspect([](const scheduler::SchedulerState& s) { return s.client_count(); }) == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& w : workers) w->stop();
  scheduler->stop();
  workers.clear();
  scheduler.reset();
  for (auto& c : contexts) c->stop();
}

}  // namespace taskwire::bench
