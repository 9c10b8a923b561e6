#pragma once
// A scheduler and single-thread workers inside this process, each on its own Context (its own
// io thread) as separate processes would be, for the map/reduce example and benchmark. A real
// program connects its Client to a running scheduler instead (see docs/guide/running-a-cluster.md).
#include <taskwire/client/client.hpp>
#include <taskwire/comm/backends.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>
#include <taskwire/worker/worker_server.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace mapreduce {

class InProcessCluster {
 public:
  /// `listen`: tcp://127.0.0.1:0 or inproc://auto.
  InProcessCluster(const std::string& listen, int nworkers) {
    taskwire::scheduler::SchedulerServerOptions so;
    so.listen = {listen};
    scheduler_ = std::make_unique<taskwire::scheduler::SchedulerServer>(registry("scheduler"), so);
    scheduler_->start();
    address_ = scheduler_->addresses().at(0);
    for (int i = 0; i < nworkers; ++i) {
      taskwire::worker::WorkerOptions wo;
      wo.scheduler_address = address_;
      wo.nthreads = 1;
      wo.name = "worker-" + std::to_string(i);
      auto& reg = registry("worker");
      workers_.push_back(std::make_unique<taskwire::worker::Worker>(reg.context(), reg, wo));
      workers_.back()->start();
    }
    using namespace std::chrono_literals;
    for (auto waited = 0ms; connected_workers() < workers_.size(); waited += 5ms) {
      if (waited > 10s) throw std::runtime_error("the workers did not register within 10 s");
      std::this_thread::sleep_for(5ms);
    }
    client_ = std::make_unique<taskwire::Client>(registry("client"), address_);
  }
  ~InProcessCluster() {
    client_.reset();
    for (auto& w : workers_) w->stop();
    scheduler_->stop();
    workers_.clear();
    scheduler_.reset();
    for (auto& c : contexts_) c->stop();
  }
  InProcessCluster(const InProcessCluster&) = delete;
  InProcessCluster& operator=(const InProcessCluster&) = delete;

  taskwire::Client& client() { return *client_; }

 private:
  taskwire::comm::Registry& registry(const char* role) {
    auto config = taskwire::runtime::Config::from_env();
    config.role = role;
    contexts_.push_back(std::make_unique<taskwire::runtime::Context>(config, 1));
    // The client's get() runs its context's event loop while it waits (see Context::Drive).
    if (config.role == "client") contexts_.back()->enable_driving();
    registries_.push_back(std::make_unique<taskwire::comm::Registry>(*contexts_.back()));
    taskwire::comm::register_builtin_backends(*registries_.back());
    contexts_.back()->start();
    return *registries_.back();
  }
  std::size_t connected_workers() const {
    return scheduler_->inspect(
        [](const taskwire::scheduler::SchedulerState& s) { return s.workers().size(); });
  }

  std::vector<std::unique_ptr<taskwire::runtime::Context>> contexts_;
  std::vector<std::unique_ptr<taskwire::comm::Registry>> registries_;
  std::unique_ptr<taskwire::scheduler::SchedulerServer> scheduler_;
  std::vector<std::unique_ptr<taskwire::worker::Worker>> workers_;
  std::string address_;
  std::unique_ptr<taskwire::Client> client_;
};

}  // namespace mapreduce
