// taskwire-bench: measures the comm backends (and, as they land, the runtime) against raw
// baselines in the same run. `taskwire-bench --help` lists the subcommands.
#include "bench/array.hpp"
#include "bench/bandwidth.hpp"
#include "bench/cluster_ranks.hpp"
#include "bench/dag.hpp"
#include "bench/held.hpp"
#include "bench/backpressure.hpp"
#include "bench/idle.hpp"
#include "bench/latency.hpp"
#include "bench/relay.hpp"
#include "bench/tasks.hpp"
#include "bench/uneven.hpp"
#include "bench/workloads.hpp"

#include <taskwire/runtime/log.hpp>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <iostream>

namespace po = boost::program_options;
using namespace taskwire;

namespace {

std::vector<std::size_t> default_sizes() {
  std::vector<std::size_t> s;
  for (std::size_t n = 8; n <= (16u << 20); n *= 8) s.push_back(n);
  if (s.back() != (16u << 20)) s.push_back(16u << 20);
  return s;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

/// "4096", "64K", "16M", "1G" (binary multiples) -> bytes.
std::size_t parse_bytes(const std::string& s) {
  std::size_t used = 0;
  const auto n = std::stoull(s, &used);
  const std::string unit = s.substr(used);
  if (unit.empty() || unit == "B") return n;
  if (unit == "K" || unit == "KiB") return n << 10;
  if (unit == "M" || unit == "MiB") return n << 20;
  if (unit == "G" || unit == "GiB") return n << 30;
  throw std::invalid_argument("bad size '" + s + "' (bytes, or with K, M, G)");
}

std::vector<std::size_t> parse_sizes(const std::string& s) {
  std::vector<std::size_t> out;
  for (const auto& item : split(s)) out.push_back(parse_bytes(item));
  return out;
}

/// Parses a subcommand's options and sets up logging; false when --help was printed.
bool parse_options(const std::vector<std::string>& args, const po::options_description& desc,
                   const std::string& level) {
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(desc).run(), vm);
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return false;
  }
  po::notify(vm);
  runtime::init_logging({level, "", -1});
  return true;
}

int latency_main(const std::vector<std::string>& args) {
  bench::LatencyOptions o;
  std::string backends = "tcp,raw-tcp", sizes, level = "warn";
  po::options_description desc(
      "taskwire-bench latency: ping-pong round trips through the Comm interface,\n"
      "with raw baselines in the same run.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends)->default_value(backends),
      "comma-separated: tcp, tls (a throwaway certificate unless TASKWIRE_TLS_CERT is set), "
      "raw-tcp, inproc; under mpiexec.mpich -n 2 (or more): mpi, raw-mpi, "
      "tcp, raw-tcp between ranks 0 and 1")(
      "sizes", po::value(&sizes), "comma-separated message sizes in bytes, or with K, M (default 8 B .. 16 MiB, x8)")(
      "iterations", po::value(&o.max_iterations)->default_value(o.max_iterations),
      "at most this many round trips per size")(
      "seconds-per-size", po::value(&o.seconds_per_size)->default_value(o.seconds_per_size),
      "time budget per size (at least 10 round trips are made)")(
      "csv", po::value(&o.csv), "append rows backend,bytes,iterations,p50_us,p99_us,mean_us to FILE")(
      "idle-seconds", po::value(&o.idle_seconds)->default_value(0.0),
      "under mpiexec: also measure each rank's CPU use while the runtime is up and idle")(
      "idle-gap", po::value(&o.idle_gap_seconds)->default_value(0.0),
      "under mpiexec, mpi and tcp: also single round trips of the first size, each after both "
      "ranks were idle this many seconds (rows <backend>-idle)")(
      "idle-rounds", po::value(&o.idle_rounds)->default_value(o.idle_rounds),
      "how many of those")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  o.backends = split(backends);
  o.sizes = sizes.empty() ? default_sizes() : parse_sizes(sizes);
  return bench::run_latency(o);
}

int tasks_main(const std::vector<std::string>& args) {
  bench::TasksOptions o;
  std::string backends, level = "warn";
  po::options_description desc(
      "taskwire-bench tasks: scheduler + single-thread workers + client; independent tasks via\n"
      "map, a chain of dependent submits, a fan-in tree reduce and submit().get() round trips.\n"
      "Alone, all of them run in this process (backends tcp, inproc). Under mpiexec (for the\n"
      "issue's shape: mpiexec.mpich -n 4 taskwire-bench tasks) rank 0 is the scheduler, rank 1\n"
      "the client and the others workers, over mpi and tcp in the same launch; with --pool\n"
      "(mpiexec.mpich -n 3 taskwire-bench tasks --pool) rank 0 runs the client with the\n"
      "scheduler embedded, as in the static pool mode, and the others are workers.\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends),
      "comma-separated: tcp, inproc alone (default tcp); mpi, tcp under mpiexec (default both)")(
      "workers", po::value(&o.workers)->default_value(o.workers), "single-thread workers (alone)")(
      "independent", po::value(&o.independent)->default_value(o.independent),
      "tasks in the map workload (0 skips it)")(
      "chain", po::value(&o.chain)->default_value(o.chain), "links in the chain workload (0 skips it)")(
      "fan-in", po::value(&o.fan_in)->default_value(o.fan_in),
      "leaves of the fan-in workload (then a binary tree of adds; 0 skips it)")(
      "roundtrips", po::value(&o.roundtrips)->default_value(o.roundtrips),
      "submit().get() repetitions (0 skips them)")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats), "runs per workload (median reported)")(
      "pool", po::bool_switch(&o.pool), "under mpiexec: the scheduler runs in the client's rank")(
      "nthreads", po::value(&o.nthreads)->default_value(o.nthreads),
      "under mpiexec: threads per worker rank")(
      "no-work-stealing",
      po::bool_switch()->notifier([&o](bool off) { o.scheduler.work_stealing = !off; }),
      "alone: the scheduler never moves a placed task to an idle worker")(
      "short-task-cover",
      po::value(&o.scheduler.short_task_cover_seconds)
          ->default_value(o.scheduler.short_task_cover_seconds),
      "alone: SchedulerOptions::short_task_cover_seconds (0: short root tasks get no extra "
      "slots)")(
      "assign-ahead",
      po::value(&o.scheduler.assign_ahead)->default_value(o.scheduler.assign_ahead),
      "alone: SchedulerOptions::assign_ahead, tasks per worker thread sent ahead of their "
      "inputs (0: off)")(
      "dashboard", po::value(&o.dashboard)->default_value(o.dashboard),
      "alone: off, on (HTTP dashboards, /metrics scraped and the page polled every second) or "
      "compare (fresh clusters without and with them, alternating, medians and ratio)")(
      "csv", po::value(&o.csv),
      "append rows backend,workload,tasks,seconds,tasks_per_s,per_task_us (with --dashboard "
      "compare: backend,workload,tasks,pair,off_seconds,on_seconds, a row a pair)")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  if (o.independent < 0 || o.chain < 0 || o.fan_in < 0 || o.roundtrips < 0 || o.repeats < 1 ||
      o.nthreads < 1) {
    fmt::print(stderr, "taskwire-bench tasks: workload sizes must not be negative and --repeats "
                       "and --nthreads must be at least 1\n");
    return 2;
  }
  if (backends.empty()) backends = bench::launched_on_several_ranks() ? "mpi,tcp" : "tcp";
  o.backends = split(backends);
  if (o.dashboard != "off" && o.dashboard != "on" && o.dashboard != "compare") {
    fmt::print(stderr, "taskwire-bench tasks: --dashboard is off, on or compare\n");
    return 2;
  }
  return bench::run_tasks(o);
}

int uneven_main(const std::vector<std::string>& args) {
  bench::UnevenOptions o;
  std::string backends = "tcp", level = "warn";
  po::options_description desc(
      "taskwire-bench uneven: independent tasks of lognormal durations on single-thread workers,\n"
      "all in this process; the makespan against the lower bound max(total work / threads,\n"
      "longest task). A task sleeps its duration by default, so that 4 workers on 2 cores\n"
      "still work in parallel; --work spin burns CPU instead (needs a core per worker).\n"
      "Each backend runs on a cluster without work stealing, then on one with it.\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends)->default_value(backends), "comma-separated: tcp, inproc")(
      "workers", po::value(&o.workers)->default_value(o.workers), "single-thread workers")(
      "tasks", po::value(&o.tasks)->default_value(o.tasks), "tasks per run")(
      "median-ms", po::value(&o.median_ms)->default_value(o.median_ms), "median task duration")(
      "sigma", po::value(&o.sigma)->default_value(o.sigma), "standard deviation of its logarithm")(
      "seed", po::value(&o.seed)->default_value(o.seed), "the durations' seed")(
      "work", po::value(&o.work)->default_value(o.work), "sleep or spin")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats), "runs per backend (median reported)")(
      "stuck-seconds", po::value(&o.stuck_seconds)->default_value(o.stuck_seconds),
      "one more task, submitted first, that takes this long (0: none); the others' completion "
      "time is reported too")(
      "csv", po::value(&o.csv), "append rows backend,tasks,workers,work,seed,bound_s,makespan_s,ratio,measured_work_s,stealing,others_s")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  if (o.workers < 1 || o.tasks < 1 || o.repeats < 1 || o.median_ms <= 0 || o.sigma < 0 ||
      o.stuck_seconds < 0 ||
      (o.work != "sleep" && o.work != "spin")) {
    fmt::print(stderr, "taskwire-bench uneven: --workers, --tasks, --repeats and --median-ms must "
                       "be positive, --sigma and --stuck-seconds not negative, --work sleep or "
                       "spin\n");
    return 2;
  }
  o.backends = split(backends);
  return bench::run_uneven(o);
}

int array_main(const std::vector<std::string>& args) {
  bench::ArrayOptions o;
  std::string backends = "mpi,tcp", level = "warn";
  bool no_check = false;
  po::options_description desc(
      "taskwire-bench array: sum((X + X^T)^T) for a random N x N matrix in B x B blocks spread\n"
      "over the workers, once per transport in the same launch, checked against a direct\n"
      "computation. Run under mpiexec.mpich -n 5 (rank 0 scheduler, rank 1 client, 3 workers).\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends)->default_value(backends), "comma-separated: mpi, tcp")(
      "n", po::value(&o.n)->default_value(o.n), "matrix order N")(
      "blocks", po::value(&o.blocks)->default_value(o.blocks), "blocks per side B")(
      "nthreads", po::value(&o.nthreads)->default_value(o.nthreads), "threads per worker rank")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats), "runs per backend (median reported)")(
      "no-check", po::bool_switch(&no_check), "skip the direct computation")(
      "csv", po::value(&o.csv), "append rows backend,n,blocks,workers,seconds,result")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  o.check = !no_check;
  o.backends = split(backends);
  return bench::run_array(o);
}

int dag_main(const std::vector<std::string>& args) {
  bench::DagOptions o;
  std::string backends = "mpi,tcp", workloads = "stencil,matmul,tree,shuffle",
              sizes = "1K,16K,128K,1M,8M", level = "warn";
  bool no_check = false;
  po::options_description desc(
      "taskwire-bench dag: task graphs that move data between workers, over MPI and TCP in the\n"
      "same launch, every result checked against a direct computation in the client:\n"
      "  stencil  a ring of W blocks, T steps; each task reads its own and both\n"
      "           neighbours' blocks of the previous step\n"
      "  matmul   blocked product, n x n output blocks of BYTES, a tree of adds per block\n"
      "  tree     L leaves of BYTES, then a binary tree of element-wise adds\n"
      "  shuffle  4 inputs cut in 4 pieces of BYTES; output j joins piece j of every input\n"
      "Run under mpiexec.mpich -n 4 (rank 0 scheduler, rank 1 client, the rest workers).\n"
      "Each round starts a cluster per transport in turn; medians over the rounds.\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends)->default_value(backends), "comma-separated: mpi, tcp")(
      "workloads,w", po::value(&workloads)->default_value(workloads), "comma-separated")(
      "sizes", po::value(&sizes)->default_value(sizes), "payload bytes per task result (K, M: binary)")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats), "rounds (median reported)")(
      "nthreads", po::value(&o.nthreads)->default_value(o.nthreads), "threads per worker rank")(
      "stencil-width", po::value(&o.shape.stencil_width)->default_value(o.shape.stencil_width), "stencil blocks W")(
      "stencil-steps", po::value(&o.shape.stencil_steps)->default_value(o.shape.stencil_steps), "stencil steps T")(
      "matmul-blocks", po::value(&o.shape.matmul_blocks)->default_value(o.shape.matmul_blocks), "matmul blocks per side n")(
      "matmul-inner", po::value(&o.shape.matmul_inner)->default_value(o.shape.matmul_inner),
      "matmul inner extent of an input block (rows x inner)")(
      "tree-leaves", po::value(&o.shape.tree_leaves)->default_value(o.shape.tree_leaves), "tree leaves L")(
      "no-check", po::bool_switch(&no_check), "skip the direct computations")(
      "csv", po::value(&o.csv), "append rows backend,workload,bytes,tasks,seconds (medians) to FILE")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  o.check = !no_check;
  o.backends = split(backends);
  o.workloads = split(workloads);
  o.sizes = parse_sizes(sizes);
  return bench::run_dag(o);
}

int held_main(const std::vector<std::string>& args) {
  bench::HeldOptions o;
  std::string backends = "tcp", bytes = "8M", level = "warn";
  po::options_description desc(
      "taskwire-bench held: a task reading one element of a vector its worker holds (as a task\n"
      "there returned it, and as scattered bytes), against a no-op task's round trip in the same\n"
      "run, on one single-thread worker. Alone (tcp, inproc) or under mpiexec.mpich -n 3 (mpi,\n"
      "tcp: rank 0 scheduler, rank 1 client, rank 2 the worker).\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends)->default_value(backends), "comma-separated: tcp, inproc, mpi")(
      "bytes", po::value(&bytes)->default_value(bytes), "size of the held vector (K, M: binary)")(
      "reads", po::value(&o.reads)->default_value(o.reads), "round trips per measurement")(
      "copies", po::value(&o.copies)->default_value(o.copies), "by-value round trips per measurement")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats), "measurements (median reported)")(
      "csv", po::value(&o.csv), "append rows backend,case,bytes,us_per_roundtrip,us_over_noop to FILE")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  o.backends = split(backends);
  o.bytes = parse_bytes(bytes);
  return bench::run_held(o);
}

int bandwidth_main(const std::vector<std::string>& args) {
  bench::BandwidthOptions o;
  std::string backends = "mpi,raw-mpi,tcp,raw-tcp", sizes, level = "warn";
  po::options_description desc(
      "taskwire-bench bandwidth: a one-way stream from rank 0 to rank 1 (windows of messages in\n"
      "flight, then one ack back), through the Comm interface and raw baselines in the same run.\n"
      "Run under mpiexec.mpich -n 2.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends)->default_value(backends), "comma-separated: mpi, raw-mpi, tcp, tls, raw-tcp")(
      "sizes", po::value(&sizes), "comma-separated message sizes in bytes, or with K, M (default 64K .. 64M, x4)")(
      "window-bytes", po::value(&o.window_bytes)->default_value(o.window_bytes),
      "bytes per window: messages in flight = this / size, 2 .. 64")(
      "seconds-per-size", po::value(&o.seconds_per_size)->default_value(o.seconds_per_size),
      "time budget per size (after one warm-up window)")(
      "min-windows", po::value(&o.min_windows)->default_value(o.min_windows), "measured windows per size, at least")(
      "csv", po::value(&o.csv), "append rows backend,bytes,messages,seconds,gb_per_s to FILE")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  o.backends = split(backends);
  o.sizes = sizes.empty() ? bench::default_bandwidth_sizes() : parse_sizes(sizes);
  return bench::run_bandwidth(o);
}

int idle_main(const std::vector<std::string>& args) {
  bench::IdleOptions o;
  std::string backends = "mpi,tcp", level = "warn";
  po::options_description desc(
      "taskwire-bench idle: CPU used by each rank while a cluster is up and idle, per transport.\n"
      "Run under mpiexec.mpich -n N, N >= 3 (rank 0 scheduler, rank 1 client, the rest workers).\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends)->default_value(backends), "comma-separated: mpi, tcp")(
      "seconds", po::value(&o.seconds)->default_value(o.seconds), "the measured idle window")(
      "settle", po::value(&o.settle)->default_value(o.settle), "wait after start-up before the window")(
      "csv", po::value(&o.csv), "append rows backend,rank,role,seconds,cpu_seconds,cpu_percent to FILE")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  o.backends = split(backends);
  return bench::run_idle(o);
}

int relay_main(const std::vector<std::string>& args) {
  bench::RelayOptions o;
  std::string level = "warn";
  po::options_description desc(
      "taskwire-bench relay: the floor under a submit-get round trip on this host: 4 processes\n"
      "pass a byte along its hops (client, scheduler, worker, scheduler, client) doing no work,\n"
      "sleeping in read() on pipes, then spinning on shared memory with sched_yield().\n"
      "Run it without mpiexec.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "roundtrips", po::value(&o.roundtrips)->default_value(o.roundtrips), "round trips per measurement")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats), "measurements per mode (median reported)")(
      "csv", po::value(&o.csv), "append rows mode,processes,roundtrips,us_per_roundtrip to FILE")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  return bench::run_relay(o);
}

int backpressure_main(const std::vector<std::string>& args) {
  bench::BackpressureOptions o;
  std::string backends = "mpi,tcp,inproc", size = "1M", level = "warn";
  po::options_description desc(
      "taskwire-bench backpressure: a writer much faster than its reader; the writer's RSS\n"
      "growth against Limits::max_queued_bytes (TASKWIRE_MAX_QUEUED_BYTES). Rank 0 writes fresh\n"
      "messages, each once the previous write's handler ran; the reader (rank 1; inproc: rank 0)\n"
      "reads --calibrate at full speed, then pauses --slowdown times that per message.\n"
      "Run under mpiexec.mpich -n 2.\n\nOptions");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends)->default_value(backends), "comma-separated: mpi, tcp, inproc")(
      "size", po::value(&size)->default_value(size),
      "bytes per message (K, M: binary); comma-separated: one run per size per backend")(
      "seconds", po::value(&o.seconds)->default_value(o.seconds), "the slow phase")(
      "slowdown", po::value(&o.slowdown)->default_value(o.slowdown), "how many times slower the reader is")(
      "calibrate", po::value(&o.calibrate)->default_value(o.calibrate), "messages read at full speed first")(
      "check-slack-mib", po::value(&o.check_slack_mib)->default_value(o.check_slack_mib),
      "exit 1 if the writer's RSS grew beyond the bound + one message + this, or the "
      "reader's beyond twice the bound + one message + this; < 0: never")(
      "csv", po::value(&o.csv), "append rows backend,bound,message_bytes,written_bytes,seconds,rss_growth to FILE")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  o.backends = split(backends);
  o.message_sizes = parse_sizes(size);
  return bench::run_backpressure(o);
}

int workloads_main(const std::vector<std::string>& args) {
  bench::WorkloadsOptions o;
  auto& s = o.sizes;
  std::string backends, workloads = "cholesky,kmeans,sort", kmeans_bytes = "128M", level = "warn";
  bool quick = false;
  po::options_description desc(
      "taskwire-bench workloads: a tiled Cholesky (potrf/trsm/syrk/gemm), k-means over scattered\n"
      "chunks (a map of partial sums with the centroids shared, a tree of adds) and a sample sort\n"
      "(split, unpack, merge), each checked (residual; the threads run's centroids bit for bit;\n"
      "order and checksum), each timed in a cluster against the same kernels on --threads\n"
      "std::threads in this process, in the same round. Under mpiexec.mpich -n 4 (rank 0\n"
      "scheduler, rank 1 client, 2 workers) over mpi and tcp; alone over tcp (or inproc) with\n"
      "--workers workers in this process. --clusters N starts N clusters per backend per round,\n"
      "one after the other, and reports each (the first cluster of a process against the next).\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "backend,b", po::value(&backends),
      "comma-separated: mpi, tcp under mpiexec (default both); tcp, inproc alone (default tcp)")(
      "workloads,w", po::value(&workloads)->default_value(workloads), "comma-separated")(
      "repeats", po::value(&o.repeats)->default_value(o.repeats), "rounds (medians reported)")(
      "clusters", po::value(&o.clusters)->default_value(o.clusters), "clusters per backend per round")(
      "workers", po::value(&o.workers)->default_value(o.workers), "alone: single-thread workers")(
      "threads", po::value(&s.threads)->default_value(s.threads), "threads of the in-process run")(
      "chol-tiles", po::value(&s.chol_tiles)->default_value(s.chol_tiles), "cholesky: tiles per side")(
      "chol-tile", po::value(&s.chol_tile)->default_value(s.chol_tile), "cholesky: tile side")(
      "kmeans-bytes", po::value(&kmeans_bytes)->default_value(kmeans_bytes), "kmeans: bytes of points (K, M, G)")(
      "kmeans-chunks", po::value(&s.kmeans_chunks)->default_value(s.kmeans_chunks), "kmeans: chunks scattered")(
      "kmeans-iterations", po::value(&s.kmeans_iterations)->default_value(s.kmeans_iterations), "kmeans: iterations")(
      "sort-keys", po::value(&s.sort_keys)->default_value(s.sort_keys), "sort: int64 keys")(
      "sort-parts", po::value(&s.sort_parts)->default_value(s.sort_parts), "sort: parts P (P*P pieces)")(
      "rank-usage", po::bool_switch(&o.rank_usage),
      "under mpiexec: each rank prints its wall, CPU time, page faults, RSS and peak RSS per cluster (stderr)")(
      "prefault-mib", po::value(&o.prefault_mib)->default_value(o.prefault_mib),
      "under mpiexec: each rank allocates, touches and frees this many MiB before its first cluster")(
      "scatter-batch", po::value(&s.scatter_batch)->default_value(s.scatter_batch),
      "values per scatter_each call (0: all in one call)")(
      "quick", po::bool_switch(&quick), "tiny sizes and one round, for tests (sizes given are ignored)")(
      "csv", po::value(&o.csv), "append rows backend,workload,round,cluster,scatter_s,compute_s to FILE")(
      "log-level", po::value(&level)->default_value(level), "trace .. off");
  if (!parse_options(args, desc, level)) return 0;
  s.kmeans_bytes = parse_bytes(kmeans_bytes);
  if (quick) {
    s.chol_tiles = 4, s.chol_tile = 32, s.kmeans_bytes = 1 << 20, s.kmeans_chunks = 4;
    s.kmeans_iterations = 3, s.sort_keys = 1 << 16, s.sort_parts = 4, o.repeats = 1;
  }
  if (o.repeats < 1 || o.clusters < 1 || o.workers < 1 || s.threads < 1 || s.chol_tiles < 1 ||
      s.chol_tile < 1 || s.kmeans_chunks < 1 || s.kmeans_iterations < 1 || s.sort_parts < 1 ||
      s.sort_keys < static_cast<std::size_t>(s.sort_parts)) {
    fmt::print(stderr, "taskwire-bench workloads: counts and sizes must be positive, and --sort-keys "
                       "at least --sort-parts\n");
    return 2;
  }
  if (backends.empty()) backends = bench::launched_on_several_ranks() ? "mpi,tcp" : "tcp";
  o.backends = split(backends);
  o.workloads = split(workloads);
  return bench::run_workloads(o);
}

void usage() {
  fmt::print(
      "usage: taskwire-bench SUBCOMMAND [options]\n\n"
      "subcommands:\n"
      "  latency    ping-pong round trips through the Comm interface vs raw baselines\n"
      "  bandwidth  one-way stream rank 0 -> rank 1, GB/s, vs raw baselines (mpiexec -n 2)\n"
      "  tasks      task throughput: independent map, dependent chain, fan-in, submit-get round trip\n"
      "  uneven     lognormal task durations on 4 workers: makespan vs max(work/threads, longest)\n"
      "  array      sum((X + X^T)^T) of a blocked random matrix over MPI and TCP (mpiexec -n 5)\n"
      "  dag        task graphs that move data (stencil, matmul, tree, shuffle), MPI vs TCP (-n 4)\n"
      "  workloads  Cholesky, k-means, sample sort: taskwire against 2 threads in one process (-n 4)\n"
      "  held       a task reading one element of an 8 MiB vector its worker holds, vs a no-op\n"
      "  idle       CPU per rank while a cluster is up and idle, MPI and TCP (mpiexec -n 4)\n"
      "  relay      the host's floor under a round trip: 4 processes relaying a byte, no work\n"
      "  backpressure  a writer 100x faster than its reader: its RSS vs the queue bound (-n 2)\n\n"
      "`taskwire-bench SUBCOMMAND --help` shows a subcommand's options.\n");
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string sub = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (sub == "latency") return latency_main(args);
    if (sub == "tasks") return tasks_main(args);
    if (sub == "uneven") return uneven_main(args);
    if (sub == "array") return array_main(args);
    if (sub == "dag") return dag_main(args);
    if (sub == "held") return held_main(args);
    if (sub == "workloads") return workloads_main(args);
    if (sub == "bandwidth") return bandwidth_main(args);
    if (sub == "idle") return idle_main(args);
    if (sub == "relay") return relay_main(args);
    if (sub == "backpressure") return backpressure_main(args);
    fmt::print(stderr, "taskwire-bench: unknown subcommand '{}'\n\n", sub);
    usage();
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "taskwire-bench {}: {}\n", sub, e.what());
    return 1;
  }
}
