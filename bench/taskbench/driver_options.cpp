#include "bench/taskbench/driver_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

namespace taskwire::taskbench {
namespace {

// TaskBench's flags (core/core.cc, App::App), by whether they take a value. App ignores any
// other argument, so a misspelt flag would silently run the default graph: refuse it here.
constexpr std::string_view kTaskBenchValueFlags[] = {
    "-steps", "-width", "-type", "-radix", "-period", "-fraction", "-kernel",
    "-iter", "-output", "-scratch", "-sample", "-imbalance", "-nodes", "-field"};
constexpr std::string_view kTaskBenchSwitches[] = {"-v", "-vv", "-and", "-skip-graph-validation"};

template <std::size_t N>
bool one_of(std::string_view arg, const std::string_view (&names)[N]) {
  for (auto name : names)
    if (arg == name) return true;
  return false;
}

template <class T>
T parse_number(std::string_view flag, std::string_view text, T min) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < min)
    throw std::invalid_argument(
        fmt::format("{} needs a whole number of at least {}, not '{}'", flag, min, text));
  return value;
}

// Takes the driver's flag at argv[i] (`--name value` or `--name=value`); false if it is not one.
bool take_driver_flag(int argc, const char* const* argv, int& i, DriverOptions& o) {
  std::string_view arg = argv[i];
  std::string_view name = arg, value;
  bool inline_value = false;
  if (auto eq = arg.find('='); eq != std::string_view::npos) {
    name = arg.substr(0, eq);
    value = arg.substr(eq + 1);
    inline_value = true;
  }
  auto next_value = [&] {
    if (inline_value) return value;
    if (i + 1 >= argc) throw std::invalid_argument(fmt::format("{} needs a value", name));
    return std::string_view(argv[++i]);
  };
  if (name == "--help") {
    o.help = true;
  } else if (name == "--backend") {
    o.transport = mpi::parse_transport(next_value());
  } else if (name == "--nthreads") {
    o.nthreads = parse_number<unsigned>(name, next_value(), 1);
  } else if (name == "--runs") {
    o.runs = parse_number<int>(name, next_value(), 1);
  } else if (name == "--window") {
    o.window_tasks = parse_number<std::size_t>(name, next_value(), 2);
  } else if (name == "--pin-points") {
    o.pin_points = true;
  } else if (name == "--log-level") {
    o.log_level = std::string(next_value());
  } else {
    return false;
  }
  return true;
}

}  // namespace

DriverOptions parse_driver_options(int argc, const char* const* argv) {
  DriverOptions o;
  o.taskbench_args.emplace_back(argc > 0 ? argv[0] : "taskwire-taskbench");
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "-help") {
      o.help = true;
    } else if (arg.starts_with("--")) {
      if (!take_driver_flag(argc, argv, i, o))
        throw std::invalid_argument(fmt::format("unknown flag '{}'", arg));
    } else if (one_of(arg, kTaskBenchValueFlags)) {
      if (i + 1 >= argc) throw std::invalid_argument(fmt::format("{} needs a value", arg));
      o.taskbench_args.emplace_back(arg);
      o.taskbench_args.emplace_back(argv[++i]);
    } else if (one_of(arg, kTaskBenchSwitches)) {
      o.taskbench_args.emplace_back(arg);
    } else {
      throw std::invalid_argument(fmt::format("unknown flag '{}'", arg));
    }
  }
  return o;
}

std::string driver_usage(std::string_view program) {
  return fmt::format(
      "usage: mpiexec.mpich -n K {0} [driver flags] [TaskBench flags]\n"
      "\n"
      "Runs TaskBench's task graphs on a taskwire cluster inside one MPI launch: rank 0 is the\n"
      "scheduler, rank 1 the client (it submits one task per graph point and timestep, whose\n"
      "inputs are the futures of its dependencies), ranks 2..K-1 workers; K >= 3. Prints\n"
      "TaskBench's report (Total Tasks, Total FLOPs, Elapsed Time, ...) for the last run.\n"
      "\n"
      "Driver flags:\n"
      "  --backend mpi|tcp   how workers and the client reach the scheduler (default mpi)\n"
      "  --nthreads N        threads running tasks on each worker (default 1)\n"
      "  --runs N            timed runs of the whole graph set; the last is reported (default 2)\n"
      "  --window N          most tasks in flight before the client waits (default 16384)\n"
      "  --pin-points        run point p of every graph on worker p mod W (owner computes)\n"
      "  --log-level L       trace, debug, info, warn, error or off (default warn)\n"
      "  --help, -h          this text, then TaskBench's flags\n"
      "\n"
      "Example: mpiexec.mpich -n 4 {0} --backend mpi -steps 100 -width 2 -type stencil_1d \\\n"
      "           -kernel compute_bound -iter 4096\n"
      "\n"
      "TaskBench's flags follow.\n\n",
      program);
}

}  // namespace taskwire::taskbench
