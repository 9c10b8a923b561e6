#pragma once
// A whole cluster inside this process, for the benchmarks that run alone: a scheduler and
// single-thread workers, each on its own Context (its own io thread), as separate processes
// would be.
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <memory>
#include <string>
#include <vector>

namespace taskwire::bench {

struct LocalCluster {
  std::vector<std::unique_ptr<runtime::Context>> contexts;
  std::vector<std::unique_ptr<comm::Registry>> registries;
  std::unique_ptr<scheduler::SchedulerServer> scheduler;
  std::vector<std::unique_ptr<worker::Worker>> workers;
  std::string address;

  /// backend: "tcp" (127.0.0.1) or "inproc"; returns once every worker has registered (or
  /// after about 5 s).
  LocalCluster(const std::string& backend, int nworkers, bool dashboard = false,
               scheduler::SchedulerOptions state = {});
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  /// A started context and registry with every builtin backend, for `role`; the client's
  /// context can be driven by the thread waiting on it.
  comm::Registry& make_registry(const char* role);
  /// The dashboards' URLs (none when off).
  std::vector<std::string> dashboard_urls() const;
};

}  // namespace taskwire::bench
