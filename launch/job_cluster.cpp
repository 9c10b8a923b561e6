#include <taskwire/launch/job_cluster.hpp>

#include <taskwire/client/client.hpp>
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/address.hpp>
#include <taskwire/comm/core/host_address.hpp>
#include <taskwire/launch/job_plan.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/scheduler/scheduler_server.hpp>
#include <taskwire/worker/memory_limits.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

namespace taskwire::launch {

namespace {

using Clock = std::chrono::steady_clock;

void check(const JobClusterOptions& o) {
  if (o.cores == 0) throw std::invalid_argument("cores must be at least 1");
  if (o.nodes == 0) throw std::invalid_argument("nodes must be at least 1");
  if (o.processes == 0 || o.processes > o.cores)
    throw std::invalid_argument(fmt::format(
        "processes must be between 1 and cores ({}): each worker needs a core", o.cores));
  if (o.job_name.empty() ||
      o.job_name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789_.-") != std::string::npos)
    throw std::invalid_argument("job_name '" + o.job_name +
                                "': letters, digits, '_', '.' and '-' only (workers are named "
                                "JOBNAME-JOBID-I)");
  worker_lifetime(o);  // throws if it leaves no time before the walltime
}

std::string host_of(const std::string& address) {
  return comm::HostPort::parse(comm::Address::parse(address).location).host;
}

// The address workers are told: the listener's contact address (for a wildcard listener, the
// address the host name resolves to), or `host`'s, or `interface`'s.
std::string advertised(const std::string& contact, const JobClusterOptions& o) {
  if (!o.host.empty()) return comm::with_host(contact, o.host);
  if (!o.interface.empty()) return comm::with_host(contact, comm::interface_address(o.interface));
  if (comm::is_wildcard_host(host_of(o.listen)) && host_of(contact).rfind("127.", 0) == 0)
    spdlog::warn("SlurmCluster: {} listens on every interface, but this machine's host name "
                 "resolves only to loopback: jobs on other nodes cannot reach {}; set host or "
                 "interface", o.listen, contact);
  return contact;
}

}  // namespace

struct JobCluster::Impl {
  struct Job {
    JobState state = JobState::pending;
    bool cancelled = false;        ///< by this cluster
    bool worker_seen = false;      ///< one of its workers connected at some point
    std::size_t connected = 0;     ///< its workers connected at the last check
    std::size_t busy = 0;          ///< tasks placed on its workers at the last check
    std::uint64_t bytes = 0;       ///< bytes of the results its workers held then
    std::vector<std::string> addresses = {};  ///< its workers connected then
    std::size_t retiring = 0;      ///< of its connected workers, those retiring
    std::size_t order = 0;         ///< submission order
    /// Its workers retire (their lifetime ended): it ends soon, and no longer counts.
    bool leaving = false;
    /// Fewer jobs were asked for: its workers retire (the scheduler moves their tasks and
    /// data to the others), then it is cancelled. It no longer counts.
    bool draining = false;
    std::set<std::string> asked = {};  ///< draining: its workers the scheduler was asked to retire
    Clock::time_point drain_deadline{};  ///< draining: cancelled by then whatever happens
  };

  JobClusterOptions options;
  std::unique_ptr<BatchSystem> batch;
  runtime::Context context;
  comm::Registry registry;
  std::unique_ptr<scheduler::SchedulerServer> scheduler;
  std::string address;
  std::unique_ptr<Client> client;  ///< this cluster's own view of the scheduler
  std::uint64_t worker_memory = 0;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, Job> jobs;
  std::size_t target_jobs = 0;
  std::size_t submitted = 0;
  std::size_t checks = 0;  ///< ticks done (status_checks())
  std::size_t failed_starts = 0;  ///< jobs in a row that ended before any worker connected
  std::optional<AdaptivePolicy> adaptive;
  Clock::time_point next_status{};  ///< when the batch system may be asked again
  bool shut_down = false;  ///< a client shut the scheduler down: hold no job
  bool closing = false;
  std::thread watcher;

  Impl(std::unique_ptr<BatchSystem> b, JobClusterOptions o)
      : options(std::move(o)), batch(std::move(b)), context(config(options.config), 2),
        registry(context) {
    check(options);
    check_nodes(options, *batch);
    if (!options.memory.empty())
      worker_memory = worker::parse_memory_limit(options.memory, 1, "memory") / options.processes;
    comm::register_builtin_backends(registry);
    context.start();
    scheduler::SchedulerServerOptions so;
    so.listen = {options.listen};
    scheduler = std::make_unique<scheduler::SchedulerServer>(registry, so);
    scheduler->start();
    address = advertised(scheduler->addresses().at(0), options);
    ClientOptions own;
    own.config = options.config;
    client = std::make_unique<Client>(scheduler->addresses().at(0), own);
    watcher = std::thread([this] { watch(); });
  }

  static runtime::Config config(runtime::Config c) {
    c.role = "scheduler";
    return c;
  }

  JobSpec spec() const {
    return job_spec(options,
                    worker_command(options, address, *batch, worker_memory),
                    worker_memory * options.processes);
  }

  std::size_t live_jobs() const {
    std::size_t n = 0;
    for (const auto& [id, job] : jobs)
      n += job.state != JobState::finished && !job.cancelled && !job.leaving && !job.draining;
    return n;
  }

  void submit_more(std::size_t n) {
    const auto script = batch->job_script(spec());
    for (std::size_t i = 0; i < n; ++i) {
      const auto id = batch->submit(script);
      jobs[id] = Job{.order = ++submitted};
      next_status = {};
      spdlog::info("SlurmCluster: submitted job {} ({} of {})", id, live_jobs(), target_jobs);
    }
  }

  // Which jobs go first when there are too many: those not started, then those whose workers
  // have nothing placed on them and hold the fewest bytes (Dask's workers_to_close), the
  // newest first.
  std::vector<std::string> victims(std::size_t n) const {
    std::vector<std::pair<std::tuple<int, std::size_t, std::uint64_t, long>, std::string>> order;
    for (const auto& [id, job] : jobs) {
      if (job.state == JobState::finished || job.cancelled || job.leaving || job.draining)
        continue;
      const int started = job.state == JobState::running || job.connected > 0;
      order.push_back({{started, job.busy, job.bytes, -static_cast<long>(job.order)}, id});
    }
    std::sort(order.begin(), order.end());
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n && i < order.size(); ++i) out.push_back(order[i].second);
    return out;
  }

  // Too many jobs: those still queued (no worker ever seen) are cancelled at once; the others'
  // workers are retired first (Dask's scale_down through retire_workers), so that a job
  // holding data or running tasks is not scancelled under them: follow_drains() cancels it
  // once they left. A running job's workers may have connected since the last check (their
  // addresses not known yet): follow_drains() retires them when it sees them.
  void reconcile() {
    if (target_jobs == 0) {
      cancel_all_at_once();
      return;
    }
    const std::size_t live = live_jobs();
    if (live < target_jobs && failed_starts < 3) submit_more(target_jobs - live);
    if (live <= target_jobs) return;
    std::vector<std::string> queued, workers;
    for (const auto& id : victims(live - target_jobs)) {
      Job& job = jobs[id];
      if (job.state == JobState::pending && !job.worker_seen && job.connected == 0) {
        queued.push_back(id);
        continue;
      }
      job.draining = true;
      job.drain_deadline = Clock::now() + drain_allowance();
      job.asked.insert(job.addresses.begin(), job.addresses.end());
      workers.insert(workers.end(), job.addresses.begin(), job.addresses.end());
      spdlog::info("SlurmCluster: retiring the workers of job {} before cancelling it ({} "
                   "connected as of the last check)",
                   id, job.addresses.size());
    }
    if (!workers.empty()) scheduler->retire_workers(workers);
    cancel(queued, "not started");
  }

  // No job wanted (scale(0), or adapt down to a minimum of 0): there is no worker left to
  // take the data, so retiring first would only copy each worker's data onto another one
  // about to go too. Every job goes at once, draining and leaving ones included, and what
  // their workers held is lost, as after Dask's scale(0) (which closes workers whose
  // retirement finds no recipient): the scheduler computes again a result still needed;
  // scattered data is gone (docs/faults.md).
  void cancel_all_at_once() {
    std::vector<std::string> ids;
    for (const auto& [id, job] : jobs)
      if (job.state != JobState::finished && !job.cancelled) ids.push_back(id);
    cancel(ids, "no worker wanted: nowhere to move their data, so it is not moved");
  }

  void cancel(const std::vector<std::string>& ids, std::string_view why) {
    if (ids.empty()) return;
    batch->cancel(ids);
    for (const auto& id : ids) jobs[id].cancelled = true;
    next_status = {};
    spdlog::info("SlurmCluster: cancelled {} job(s) ({}): {}", ids.size(), why,
                 fmt::join(ids, " "));
  }

  // How long the workers of a job scaled down may take to hand over before it is cancelled
  // all the same: what a worker's own retirement is given (its lifetime grace), else 60 s.
  std::chrono::seconds drain_allowance() const {
    const auto grace = worker_lifetime(options).grace;
    return grace.count() > 0 ? grace : std::chrono::seconds(60);
  }

  // A draining job is cancelled once no worker of it is connected, once the scheduler gave their
  // retirement up (nowhere to copy their data: the workers staying are full or gone; what
  // they held is computed again if needed), or at its deadline. A worker of it that
  // connected late is retired too.
  void follow_drains(const SchedulerInfo& info) {
    std::vector<std::string> late, done;
    for (auto& [id, job] : jobs) {
      if (!job.draining || job.cancelled) continue;
      bool given_up = false;
      for (const auto& w : info.workers) {
        if (job_of(w.name) != id || w.retiring) continue;
        if (job.asked.insert(w.address).second) late.push_back(w.address);
        else given_up = true;
      }
      if (job.connected == 0 || given_up || Clock::now() >= job.drain_deadline) done.push_back(id);
    }
    if (!late.empty()) scheduler->retire_workers(late);
    cancel(done, "scaled down; their workers retired");
  }

  void set_target(std::size_t jobs_wanted) {
    if (shut_down || closing) throw std::logic_error("the cluster's scheduler was shut down");
    target_jobs = jobs_wanted;
    failed_starts = 0;
    reconcile();
  }

  // The job id in a worker's name JOBNAME-JOBID-I; "" for a worker of somebody else's.
  std::string job_of(const std::string& worker) const {
    const std::string prefix = options.job_name + "-";
    const auto last = worker.rfind('-');
    if (worker.rfind(prefix, 0) != 0 || last == std::string::npos || last < prefix.size())
      return "";
    return worker.substr(prefix.size(), last - prefix.size());
  }

  void note_workers(const SchedulerInfo& info) {
    for (auto& [id, job] : jobs) {
      job.connected = job.busy = job.retiring = 0;
      job.bytes = 0;
      job.addresses.clear();
    }
    for (const auto& w : info.workers) {
      const auto it = jobs.find(job_of(w.name));
      if (it == jobs.end()) continue;
      it->second.worker_seen = true;
      ++it->second.connected;
      it->second.busy += w.processing;
      it->second.bytes += w.bytes_held;
      it->second.addresses.push_back(w.address);
      it->second.retiring += w.retiring;
      failed_starts = 0;
    }
    // A job ended by its workers' lifetime is replaced once they start to retire, not when
    // the batch system reports it gone (dask-jobqueue#691: such jobs were not replaced).
    for (auto& [id, job] : jobs) {
      if (job.leaving || job.cancelled || job.draining || job.connected == 0 ||
          job.retiring < job.connected)
        continue;
      job.leaving = true;
      spdlog::info("SlurmCluster: the workers of job {} retire (their lifetime is over); a job "
                   "takes its place",
                   id);
    }
  }

  void note_states() {
    // A job just submitted or cancelled is asked about at the next tick anyway; the rest
    // wait for status_interval.
    if (Clock::now() < next_status) return;
    next_status = Clock::now() + options.status_interval;
    std::vector<std::string> ids;
    for (const auto& [id, job] : jobs)
      if (job.state != JobState::finished) ids.push_back(id);
    if (ids.empty()) return;
    for (const auto& [id, state] : batch->states(ids)) {
      auto& job = jobs[id];
      if (state == JobState::finished && !job.cancelled && !job.worker_seen) {
        ++failed_starts;
        if (failed_starts == 3)
          spdlog::error("SlurmCluster: 3 jobs in a row ended before a worker of theirs "
                        "connected (last: {}); not submitting more until scale() (see the "
                        "jobs' output{})", id,
                        options.log_directory.empty() ? "" : " in " + options.log_directory);
      }
      job.state = state;
    }
    std::erase_if(jobs, [](const auto& j) { return j.second.state == JobState::finished; });
  }

  // The workers as the scheduler sees them now; none when it cannot say. Not under `mu`.
  std::optional<SchedulerInfo> ask_scheduler() {
    try {
      if (!scheduler_finished()) return client->scheduler_info();
    } catch (const std::exception& e) {
      if (!scheduler_finished())
        spdlog::warn("SlurmCluster: cannot ask the scheduler: {}", e.what());
    }
    return std::nullopt;
  }

  void tick() {
    const std::optional<SchedulerInfo> info = ask_scheduler();
    std::lock_guard lock(mu);
    if (closing) return;
    if (!shut_down && scheduler_finished()) {
      // A client's shutdown() closed the workers: their jobs end, and none replaces them.
      spdlog::info("SlurmCluster: the scheduler was shut down; no job is held any more");
      shut_down = true;
      adaptive.reset();
      target_jobs = 0;
    }
    try {
      if (info) {
        note_workers(*info);
        follow_drains(*info);
      }
      note_states();
      if (adaptive && info) {
        const Load load{info->tasks("processing") + info->tasks("queued") +
                            info->tasks("no-worker"),
                        info->tasks("waiting"), std::max(1u, options.cores / options.processes)};
        const auto workers = adaptive->target(load, Clock::now());
        const auto per_job = workers_per_job(options);
        target_jobs = (workers + per_job - 1) / per_job;
      }
      reconcile();
    } catch (const BatchError& e) {
      spdlog::warn("SlurmCluster: {}", e.what());
    }
    ++checks;
    cv.notify_all();
  }

  bool scheduler_finished() const {
    return scheduler->finished().wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  void watch() {
    std::unique_lock lock(mu);
    while (!closing) {
      const auto every = adaptive ? adaptive->options().interval : std::chrono::milliseconds(500);
      cv.wait_for(lock, every, [this] { return closing; });
      if (closing) break;
      lock.unlock();
      tick();
      lock.lock();
    }
  }

  void close() {
    {
      std::lock_guard lock(mu);
      if (closing) return;
      closing = true;
      cv.notify_all();
    }
    if (watcher.joinable()) watcher.join();
    std::lock_guard lock(mu);
    std::vector<std::string> ids;
    for (const auto& [id, job] : jobs)
      if (job.state != JobState::finished) ids.push_back(id);
    try {
      batch->cancel(ids);
    } catch (const std::exception& e) {
      spdlog::error("SlurmCluster: cancelling jobs {}: {}", fmt::join(ids, " "), e.what());
    }
    jobs.clear();
    client.reset();
    scheduler->stop();
  }
};

JobCluster::JobCluster(std::unique_ptr<BatchSystem> batch, JobClusterOptions options)
    : impl_(std::make_unique<Impl>(std::move(batch), std::move(options))) {}

JobCluster::~JobCluster() { close(); }

std::string JobCluster::scheduler_address() const { return impl_->address; }

std::string JobCluster::job_script() const { return impl_->batch->job_script(impl_->spec()); }

void JobCluster::scale(std::size_t workers) {
  const auto per = workers_per_job(impl_->options);
  scale_jobs((workers + per - 1) / per);
}

void JobCluster::scale_jobs(std::size_t jobs) {
  // The workers as they are now, not at the watcher's last look (up to an interval ago): a
  // job whose workers connected since is retired, not cancelled as if still queued.
  const auto info = impl_->ask_scheduler();
  std::lock_guard lock(impl_->mu);
  if (info && !impl_->closing) impl_->note_workers(*info);
  impl_->adaptive.reset();
  impl_->set_target(jobs);
}

void JobCluster::adapt(AdaptOptions options) {
  std::lock_guard lock(impl_->mu);
  impl_->adaptive.emplace(options, impl_->target_jobs * workers_per_job(impl_->options));
  impl_->cv.notify_all();
}

bool JobCluster::wait_for_workers(std::size_t n, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (std::lock_guard lock(impl_->mu); impl_->closing) return false;
    try {
      if (impl_->client->scheduler_info().workers.size() >= n) return true;
    } catch (const std::exception&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::vector<JobStatus> JobCluster::jobs() const {
  std::lock_guard lock(impl_->mu);
  std::vector<JobStatus> out;
  for (const auto& [id, job] : impl_->jobs)
    if (!job.cancelled) out.push_back({id, job.state, job.connected, job.leaving, job.draining});
  return out;
}

std::size_t JobCluster::submitted_jobs() const {
  std::lock_guard lock(impl_->mu);
  return impl_->submitted;
}

std::size_t JobCluster::status_checks() const {
  std::lock_guard lock(impl_->mu);
  return impl_->checks;
}

bool JobCluster::shut_down() const {
  std::lock_guard lock(impl_->mu);
  return impl_->shut_down || impl_->closing;
}

void JobCluster::close() { impl_->close(); }

}  // namespace taskwire::launch
