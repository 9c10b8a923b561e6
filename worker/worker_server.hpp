#pragma once
// taskwire::worker::Worker: the worker server, a thin shell around WorkerState (after Dask
// distributed's worker.py). It connects to the scheduler, registers, listens for peers'
// get_data requests, turns scheduler batches into events and the state machine's
// instructions into messages (batched per event-loop turn), runs tasks on its Executor and
// fetches dependencies from peer workers over connections it keeps and reuses.
//
// Usable in-process (tests, the MPI launcher) and by the taskwire-worker daemon.
//
// Threading: all state lives on one strand of the context's io_context; comm handlers and
// executor completions are posted to it. The context must be running (Context::start())
// for the worker to make progress.
#include <taskwire/comm/core/registry.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/runtime/resources.hpp>
#include <taskwire/worker/data_store.hpp>
#include <taskwire/worker/memory_limits.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace taskwire::worker {

struct WorkerOptions {
  /// Where the scheduler listens, e.g. tcp://10.0.0.5:8786, inproc://scheduler, mpi://0.
  /// Required.
  std::string scheduler_address;
  /// This worker's name in logs and messages. Default: its contact address.
  std::string name;
  /// A nanny watches this process and reports its death to the scheduler (taskwire-worker
  /// sets it when it runs under its nanny).
  bool nanny = false;
  /// Threads executing tasks (at least 1).
  unsigned nthreads = 1;
  /// What this worker offers tasks, e.g. {{"GPU", 2}} (taskwire-worker --resources
  /// "GPU=2"): a task with SubmitOptions::resources runs only where they exist, and only
  /// while enough of them is free. Amounts must be positive (start() throws
  /// std::invalid_argument otherwise).
  runtime::Resources resources;
  /// Where peers fetch data from this worker. Default: on the scheduler's scheme:
  /// tcp://HOST:0 where HOST is the advertised host (below), inproc://auto, or mpi://RANK for
  /// this process's rank. A wildcard (tcp://0.0.0.0:PORT) binds every interface and
  /// advertises the advertised host with the bound port.
  std::string listen_address;
  /// tcp:// and tls:// only, as dask-worker's --host and --interface: the host (an address,
  /// or a name the peers resolve) this worker advertises to the scheduler, its peers and
  /// clients, or the network interface (eth0, ib0...) whose address it advertises; at most
  /// one of the two. Both empty: the local address this worker reaches the scheduler from.
  /// Also where it listens, unless listen_address says otherwise.
  std::string host;
  std::string interface;
  /// More addresses where this worker serves its data, advertised next to its own for those
  /// who cannot reach that one: e.g. a tcp:// door for clients outside an MPI job whose
  /// workers talk over mpi://. A wildcard advertises the host as above, or else the one the
  /// host name gives.
  std::vector<std::string> extra_listen_addresses;
  /// Interval between heartbeats to the scheduler.
  std::chrono::milliseconds heartbeat_interval{500};
  /// Deadline for connecting to the scheduler at start(); 0: the context's connect_timeout;
  /// comm::kNoTimeout: until it answers or request_stop() is called.
  std::chrono::milliseconds connect_timeout{0};
  /// Deadline for connecting to a peer worker before its keys count as missing there;
  /// 0: the context's connect_timeout.
  std::chrono::milliseconds peer_connect_timeout{0};
  /// A fetch from a peer fails (as if the peer were gone: its keys are fetched from another
  /// holder, or reported missing so the scheduler recomputes them, and the gather slot is
  /// freed) once nothing at all has arrived from that peer for this long while a request to
  /// it is outstanding; 0: no deadline. An inactivity deadline, not a transfer deadline: a
  /// large reply that keeps arriving is never cut (tcp counts its bytes as they come; on
  /// backends that count only whole messages, mpi and inproc, one reply must arrive within
  /// it). Detected between this and 1.25 times this after the last byte. 30 s, as Dask's
  /// distributed.comm.timeouts.tcp: a live peer answers get_data from its comm's own
  /// strand, never behind its tasks, so 30 s of silence means it is stopped, partitioned
  /// or swamped, and waiting longer only holds its dependents.
  std::chrono::milliseconds fetch_timeout{30'000};
  /// Peers fetched from at once (see WorkerStateOptions::max_gather_peers).
  std::size_t max_gather_peers = 4;
  /// Results of at most this many bytes travel inline with task_finished (the scheduler
  /// forwards them to the clients that want them, saving their get_data round trip);
  /// larger ones stay here until fetched. 0 sends none inline. Why 8 KiB and not more:
  /// docs/mpi-poll-policy.md, "Results inline".
  std::size_t inline_result_bytes = 8 * 1024;
  /// Tasks of a function whose runs averaged at most this long run on the worker's event
  /// loop instead of a pool thread (while a thread slot is free), saving two thread
  /// hand-overs per task; 0 always uses the pool. A worker of one thread runs inline every
  /// function that averaged at most 1 ms (one handler's budget: it has no other slot to hold
  /// up). See worker/task_runner.cpp.
  double inline_task_seconds = 20e-6;
  /// Serve a dashboard page, /metrics, /json/... and /health over HTTP (the taskwire-worker
  /// daemon does unless --no-dashboard). Off for workers made in-process.
  bool dashboard = false;
  /// Where: HOST:PORT, ":PORT" (127.0.0.1), port 0 for a free port (the default; the log
  /// says "dashboard at http://...").
  std::string dashboard_address = ":0";
  /// The memory limit, its thresholds and where results spill (see memory_limits.hpp).
  /// Default: no limit (taskwire-worker's default is --memory-limit auto). With a limit the
  /// worker makes its spill directory in the constructor (std::runtime_error if it cannot)
  /// and removes it when destroyed.
  MemoryOptions memory;
  /// When to ask the scheduler to retire this worker (taskwire-worker --lifetime; Dask's
  /// lifetime, but soft): from then on it gets no new task, what it has not started goes to
  /// other workers, the data only it holds is copied to them, and the scheduler closes it
  /// for good (close_worker without rejoin: a nanny does not restart it). The epoch (the
  /// default): never. A time already past: at once.
  std::chrono::system_clock::time_point retire_at{};
  /// If the scheduler has not closed it this long after retire_at (no other worker to take
  /// its data, a task that runs on), the worker closes by itself as on a stop: what it held
  /// alone is then computed again elsewhere.
  std::chrono::milliseconds retire_grace{60'000};
};

/// How the worker ended.
struct CloseStatus {
  bool closed = false;  ///< false while it runs
  /// Closed on purpose: close_worker from the scheduler, or stop()/request_stop(). False when
  /// the scheduler's comm failed or sent something malformed, or the scheduler refused the
  /// worker (worker_refused: e.g. its name is taken by another live worker).
  bool clean = false;
  /// The scheduler's connection failed, or the scheduler dropped this worker but would take
  /// it back (close_worker with rejoin): taskwire-worker then starts a fresh worker that
  /// joins again when the scheduler answers (heal after a partition, a freeze, a restart).
  bool scheduler_lost = false;
  std::string reason;  ///< a sentence for logs and the daemon's exit message
};

/// What a stopped worker leaves to the next one in the same process (Worker::keep_data).
struct KeptData;

class Worker {
 public:
  /// Borrows `context` and `registry` (which must outlive the worker). Does nothing yet.
  /// `kept`: the results (and spill directory) of the worker this one replaces, which it
  /// holds from the start and tells the scheduler of when it registers.
  Worker(runtime::Context& context, comm::Registry& registry, WorkerOptions options,
         std::shared_ptr<KeptData> kept = nullptr);
  /// stop(); must therefore not run on one of the context's threads.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Blocking: connects to the scheduler (retrying until the connect timeout, and refusing
  /// a peer that is not a scheduler), starts listening, starts the thread pool and sends
  /// register_worker. Throws comm::CommError (scheduler unreachable, address in use, aborted
  /// when request_stop() ends the wait...) or std::invalid_argument (bad options).
  /// Not from the context's threads. Call once.
  void start();
  /// Non-blocking, any thread (signal handlers included): begins a clean shutdown: tells
  /// the scheduler (worker_closing), closes every comm, stops the listener; running tasks
  /// finish and their results are dropped. Idempotent.
  void request_stop();
  /// request_stop(), waits until closed, then joins the thread pool. Idempotent. Not from
  /// the context's threads nor from a task.
  void stop();
  /// Blocks until the worker has closed (for any reason) or `timeout` passed; true if closed.
  bool wait_closed(std::chrono::milliseconds timeout);
  void wait_closed();
  CloseStatus close_status() const;

  /// The contact address peers fetch from (after start()).
  std::string address() const;
  std::string name() const;
  /// "http://HOST:PORT" of the dashboard (after start()); "" when it is off.
  std::string dashboard_url() const;
  /// The worker's data (results and fetched dependencies); thread-safe.
  const DataStore& data() const;
  /// After stop(): its results and spill directory, which it then no longer removes, for a
  /// worker joining again in its place (taskwire-worker after a blip: Dask's reconnect keeps
  /// the data). Null when it holds nothing.
  std::shared_ptr<KeptData> keep_data();

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace taskwire::worker
