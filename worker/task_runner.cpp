// Running tasks: on the worker's thread pool, or inline on its event loop for functions
// measured to be very short, and handing results back to the state machine in batches.
//
// Why inline: each hand-over between threads (event loop -> pool thread -> event loop) costs a
// futex or epoll wake-up, far more than a no-op task (docs/measurements.md, "Very short
// tasks"). A function whose runs on the pool averaged at most
// WorkerOptions::inline_task_seconds runs on the event loop while a thread slot is free (so
// no more than nthreads tasks ever run at once), for at most kInlineBudget per handler. Every
// run feeds the average, so one slow inline run sends the function back to the pool until
// its pool runs are short again; a run inline for more than kInlineBanFactor times the limit
// is a strike, and kInlineStrikes of them send the function to the pool for good. Strikes
// fade slowly (one per kInlineStrikeFade short inline runs), and a run during which the
// thread was off the CPU counts a tenth of a strike (kInlineStrikeWeight): with more busy
// threads than cores a 1 us task is now and then preempted for milliseconds (full strikes for
// those banned a no-op function to the pool, halving throughput), while a function that blocks (sleep, I/O) still goes
// to the pool after 30 such runs.
#include <taskwire/worker/task_runner.hpp>

#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/runtime/trace.hpp>
#include <taskwire/worker/crash_record.hpp>

#include <boost/core/demangle.hpp>
#include <spdlog/spdlog.h>

#include <cxxabi.h>

#include <algorithm>
#include <utility>

namespace taskwire::worker {

TaskRunner::TaskRunner(WorkerCore& core, WorkerActions& actions, DashboardService& dashboard)
    : core_(core), actions_(actions), dashboard_(dashboard), executor_(core.options.nthreads),
      inline_runs_(core.options.inline_task_seconds, core.options.nthreads) {}

namespace {
/// The demangled type of the exception being handled (in a catch block), e.g.
/// "std::invalid_argument": the dynamic type, also for one caught by `catch (...)`.
std::string current_exception_type() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  return type ? boost::core::demangle(type->name()) : "unknown";
}
}  // namespace

Event TaskRunner::run_task(Execute& task) {
  using Clock = std::chrono::steady_clock;
  const auto* fn = runtime::FunctionRegistry::global().find(task.function);
  runtime::trace::record(runtime::trace::What::task_start, {}, task.key);
  const auto t0 = Clock::now();
  auto elapsed = [&t0] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  Event result;
  if (!fn) {
    result = ExecuteFailure{
        task.key, unknown_function_message(task.function, core_.name, core_.address), 0, "", ""};
  } else {
    const crash::RunningTask running(task.key, task.function);  // for a crash's last words
    try {
      auto value = fn->invoke(task.args);
      result = ExecuteSuccess{task.key, std::move(value), elapsed(), ""};
    } catch (const std::exception& e) {
      result = ExecuteFailure{task.key, e.what(), elapsed(), current_exception_type(), ""};
    } catch (...) {
      result = ExecuteFailure{task.key,
                              "the task threw an exception not derived from std::exception",
                              elapsed(), current_exception_type(), ""};
    }
  }
  runtime::trace::record(runtime::trace::What::task_end, {}, task.key);
  // An argument the task decoded is now held live: the bytes it came as can go.
  for (const auto& arg : task.args) core_.data->settle(arg);
  task.args.clear();  // release the arguments on the thread that ran the task
  TaskRun run = task.run;
  run.thread = Executor::current_thread();
  std::visit([&run](auto& r) {
    if constexpr (requires { r.run; }) r.run = run;
  }, result);
  return result;
}

namespace {
/// How long the task behind an execution result ran (0 if it never started).
double duration_of(const Event& e) {
  if (const auto* s = std::get_if<ExecuteSuccess>(&e)) return s->duration_s;
  if (const auto* f = std::get_if<ExecuteFailure>(&e)) return f->duration_s;
  return 0;
}
}  // namespace

void TaskRunner::record_duration(const std::string& function, const Event& result,
                                 bool ran_inline) {
  const double seconds = duration_of(result);
  if (dashboard_.recording()) dashboard_.record_task_done(function, result);
  if (inline_runs_.record(function, seconds, ran_inline))
    spdlog::debug("worker {}: '{}' ran {:.0f} us inline, one long inline run too many; it runs "
                  "on the thread pool from now on",
                  core_.name, function, seconds * 1e6);
}

// On the strand. A failure is a warning (with what the task threw); the rest is debug, with
// the level checked before anything is formatted: tasks of a few microseconds pass here.
void TaskRunner::log_result(const std::string& function, const Event& result) const {
  if (const auto* f = std::get_if<ExecuteFailure>(&result)) {
    if (f->exception_type.empty())
      spdlog::warn("worker {}: task '{}' ({}) failed: {}", core_.name, f->key, function,
                   f->message);
    else
      spdlog::warn("worker {}: task '{}' ({}) raised {} after {:.3f} ms: {}", core_.name, f->key,
                   function, f->exception_type, f->duration_s * 1e3, f->message);
  } else if (spdlog::should_log(spdlog::level::debug)) {
    if (const auto* s = std::get_if<ExecuteSuccess>(&result))
      spdlog::debug("worker {}: task '{}' ({}) finished in {:.3f} ms, {} bytes", core_.name, s->key,
                    function, s->duration_s * 1e3, s->result.size());
  }
}

void TaskRunner::execute(Execute task) {
  const bool inline_run = inline_runs_.runs_inline(task.function);
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("worker {}: task '{}' ({}) started {}", core_.name, task.key, task.function,
                  inline_run ? "inline on the event loop" : "on the thread pool");
  if (inline_run) {
    inline_runs_.before_inline_run();
    inline_done_.push_back(run_task(task));
    record_duration(task.function, inline_done_.back(), true);
    log_result(task.function, inline_done_.back());
    return;
  }
  const auto priority = task.priority;
  const auto key = task.key;
  auto job = [this, held = core_.hold(), task = std::move(task)]() mutable {
    Event result = run_task(task);
    on_executed(std::move(task.function), std::move(result));
  };
  if (!executor_.submit(priority, std::move(job)))
    spdlog::debug("worker {}: task '{}' not run: the worker is closing", core_.name, key);
}

// On a pool thread: results queue up and reach the strand together, one post for all that
// finished before the strand got to them (each post to a sleeping event loop is a wake-up).
void TaskRunner::on_executed(std::string function, Event result) {
  {
    std::lock_guard lock(executed_mu_);
    executed_.push_back(Executed{std::move(function), std::move(result)});
    if (executed_posted_) return;
    executed_posted_ = true;
  }
  runtime::post_urgent(core_.context.urgent(), core_.strand,
                       [this, held = core_.hold()] { drain_executed(); });
}

void TaskRunner::drain_executed() {
  std::vector<Executed> done;
  {
    std::lock_guard lock(executed_mu_);
    done.swap(executed_);
    executed_posted_ = false;
  }
  std::vector<Event> events;
  events.reserve(done.size());
  for (auto& d : done) {
    record_duration(d.function, d.result, false);
    log_result(d.function, d.result);
    events.push_back(std::move(d.result));
  }
  actions_.handle(std::move(events));
}

}  // namespace taskwire::worker
