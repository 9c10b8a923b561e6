#pragma once
// taskwire::Client: the public C++ API, after dask.distributed.Client.
//
//   TASKWIRE_REGISTER(inc);                     // in a file every process links or preloads
//   taskwire::Client client{"tcp://127.0.0.1:8786"};
//   auto a = client.submit(inc, 1);             // Future<int>
//   auto b = client.submit(add, a, 10);         // `a` is a dependency
//   auto s = client.submit(sum, std::vector{a, b});  // sum(std::vector<int>): a list of
//                                               // futures is one argument, each a dependency
//   int v = b.get();                            // 12
//   auto fs = client.map(inc, std::vector<int>{1, 2, 3});
//   std::vector<int> vs = client.gather(fs);
//   auto data = client.scatter(std::vector<double>(1000));   // one Future<std::vector<double>>
//   auto parts = client.scatter_each(std::vector<int>{1, 2});  // one Future<int> per element,
//                                               // straight to the workers, spread evenly
//   auto c2 = client.map(add, std::vector<int>{1, 2}, std::vector<int>{3, 4});  // zipped
//   auto piece = client.getitem(client.submit(split, xs), 2);   // part 2 of the result
//   auto c = client.submit({.key = "load-a", .retries = 2}, inc, 1);  // SubmitOptions
//   auto info = client.scheduler_info();        // workers, their threads and memory, tasks
//   taskwire::progress(fs);                     // a bar or log lines until fs are done
//                                               // (client/progress.hpp)
//   client.shutdown();                          // stops scheduler and workers
//
// Functions must be registered with TASKWIRE_REGISTER (free functions, not lambdas: another
// process finds a function by its registered name). Arguments and results are any type
// runtime/serialize.hpp accepts (README "What can be sent"); another one fails to compile with
// a message naming it. Thread-safety: a Client may be used from several threads at once.
#include <taskwire/client/future.hpp>
#include <taskwire/client/scheduler_info.hpp>
#include <taskwire/runtime/config.hpp>
#include <taskwire/runtime/function_registry.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace taskwire {

namespace comm {
class Registry;  // comm/core/registry.hpp: only the constructor taking a caller's registry
}

namespace client {
/// How a Client connects and waits; both Client constructors take one.
struct ClientOptions {
  /// The configuration of the client's own context (its role is set to "client"). Not read by
  /// the constructor taking a caller's registry: that registry's context has its own.
  runtime::Config config = runtime::Config::from_env();
  /// How long connecting to the scheduler may take; a refused connection is retried until
  /// then (the scheduler may still be starting). Then the constructor throws comm::CommError.
  std::chrono::milliseconds connect_timeout{10'000};
  /// How long one fetch of results from a worker may take (connecting to it, asking, reading
  /// the reply), plus 1 s per 100 MB the scheduler reported for them. After a failed fetch,
  /// also how long get() waits for the scheduler's news on the key (a lost result is
  /// computed again) before it throws TaskError. It does not bound the wait for a task to
  /// finish: use Future::wait_for for that.
  std::chrono::milliseconds fetch_timeout{10'000};
  /// Default: client-PID. Not read with a caller's registry (its context's name is used).
  std::string name;
};
}  // namespace client

using client::ClientOptions;

/// Settings of one submission (or of every task of one map), designated-initializer friendly:
/// `client.submit({.key = "load-a", .retries = 2}, load, path)`.
struct SubmitOptions {
  /// The task's key; empty: a fresh "<function>-<client>-<n>". A key the scheduler already
  /// holds names that task: the submission shares it (its function and arguments are not run
  /// again), as Dask does. For map, a prefix: the i-th task is "<key>-<i>".
  std::string key = {};
  /// Times the task runs again, on any worker, after it throws or its worker dies running it;
  /// after that it errs as usual.
  std::uint32_t retries = 0;
  /// Higher runs first, as in Dask: ahead of queued tasks of lower priority, including those
  /// of graphs submitted earlier (a task already running is not interrupted). Default 0.
  std::int32_t priority = 0;
  /// A key derived from the function's name and the serialized arguments (and the keys of
  /// future arguments), the same in every client: equal submissions share one task, which
  /// runs once while any of them holds a future to it. Ignored when `key` is given.
  bool pure = false;
  /// What the task consumes while it runs, e.g. {{"GPU", 1}}: it runs only on a worker that
  /// offers at least that much (taskwire-worker --resources "GPU=2"), and only while that
  /// much is free there. A resource no connected worker has: the task waits (no-worker,
  /// listed by scheduler_info()) until one joins. Never relaxed by allow_other_workers.
  std::map<std::string, double> resources = {};
  /// Workers the task may run on, by address or name; empty: any. None of them connected:
  /// the task waits (no-worker) until one joins, unless allow_other_workers.
  std::vector<std::string> workers = {};
  /// `workers` is a preference: one of them if any is connected and can take the task
  /// (not paused, enough resources free), any other otherwise.
  bool allow_other_workers = false;
};

/// Where scatter and scatter_each place data, designated-initializer friendly:
/// `client.scatter(centroids, {.broadcast = true})`.
struct ScatterOptions {
  /// Workers (addresses or names) to place it on; empty: any connected. None of them
  /// connected: std::invalid_argument.
  std::vector<std::string> workers = {};
  /// A copy on every one of those workers (Dask's broadcast=True): for data every task
  /// reads, so that none fetches it. Each copy counts on its worker.
  bool broadcast = false;
};

/// What wait(futures, options) waits for, designated-initializer friendly:
/// `client.wait(futures, {.count = 1, .timeout = 5s})`.
struct WaitOptions {
  /// Return once this many are done; default (and anything above their number): all of them.
  std::size_t count = std::numeric_limits<std::size_t>::max();
  /// Return by then even if fewer are done; default: no limit.
  std::optional<std::chrono::milliseconds> timeout = std::nullopt;
};

/// One task of Client::submit_tasks: a function by its registered name on arguments given as
/// serialized values or as futures, for code that builds task graphs of a shape `submit`
/// cannot spell in C++ types (graph::execute, the TaskBench driver).
struct TaskDescription {
  /// The result of the call's task at index `task` (an earlier one), as an argument.
  struct Result {
    std::size_t task;
  };
  /// One argument: a value serialized with runtime::to_frame (a buffer given to several tasks
  /// of one call is sent once), a future whose result is passed (a dependency; any Future<T>
  /// becomes one with as<runtime::Frame>()), or an earlier task's Result.
  using Argument = std::variant<runtime::Frame, Future<runtime::Frame>, Result>;

  std::string function;  ///< a name registered in every process (runtime::FunctionRegistry)
  std::vector<Argument> args = {};
  /// What its generated key starts with ("<prefix>-<client>-<n>"); empty: `function`.
  /// options.key, when given, is the key itself.
  std::string key_prefix = {};
  /// Where it runs among this client's tasks of equal options.priority, lower first; empty:
  /// after every task submitted so far, as submit does (see Client::next_order).
  std::optional<std::int64_t> order = std::nullopt;
  SubmitOptions options = {};
};

/// An argument of Client::map given to every task unchanged, in the place of a sequence:
/// fixed(x) with x a value (serialized once, for all tasks) or a Future.
template <class T>
struct Fixed {
  T value;
};
template <class T>
Fixed<std::remove_cvref_t<T>> fixed(T&& value) {
  return {std::forward<T>(value)};
}
template <class T>
struct is_fixed : std::false_type {};
template <class T>
struct is_fixed<Fixed<T>> : std::true_type {};

namespace client::detail {
/// One argument of a TaskDraft: a frame of the submission, or the key of a dependency.
struct TaskArg {
  enum Kind : std::uint8_t { frame = 0, dependency = 1 };
  Kind kind = frame;
  std::uint32_t frame_index = 0;  ///< kind == frame: index into the submission's frames
  std::string key;                ///< kind == dependency
};
/// A task as submit, map, getitem and unpack build it in the caller's types; client.cpp
/// turns it into the wire's task spec, which this header does not see.
struct TaskDraft {
  std::string key;
  std::string function;  ///< its registered name
  std::vector<TaskArg> args;
  std::vector<std::string> dependencies;
  std::int64_t priority = 0;  ///< the client's submission order (Client::next_order)
  SubmitOptions options = {};  ///< all but options.key, which has made `key` already
};

/// A value already among a message's frames (map's fixed values): the argument refers to it.
struct FrameAt {
  std::uint32_t index;
};

/// map's view of one of its inputs, for a parameter declared `P`: at(i) is the i-th task's
/// argument. A sequence gives its i-th element; fixed(Future) the future; fixed(value) the
/// frame it was serialized to once.
template <class P, class Seq>
class MapArg {
 public:
  static_assert(requires(const Seq& s) { s.size(); s[0]; },
                "map: each input must be a sequence (a std::vector) or fixed(x)");
  MapArg(const Seq& seq, std::vector<runtime::Frame>&) : seq_(&seq) {}
  const auto& at(std::size_t i) const { return (*seq_)[i]; }

 private:
  const Seq* seq_;
};
template <class P, class T>
class MapArg<P, Fixed<T>> {
 public:
  using Param = std::remove_cvref_t<P>;
  MapArg(const Fixed<T>& f, std::vector<runtime::Frame>& frames) : value_(&f.value) {
    if constexpr (!is_future<T>::value) {
      static_assert(std::is_convertible_v<const T&, Param>,
                    "map: a fixed value must convert to the parameter type");
      frame_ = FrameAt{static_cast<std::uint32_t>(frames.size())};
      frames.push_back(runtime::to_frame(static_cast<const Param&>(Param(f.value))));
    }
  }
  auto at(std::size_t) const {
    if constexpr (is_future<T>::value) return *value_;
    else return frame_;
  }

 private:
  const T* value_;
  FrameAt frame_{0};
};

template <class Seq>
std::optional<std::size_t> map_input_size(const Seq& seq) {
  if constexpr (is_fixed<Seq>::value) return std::nullopt;
  else return seq.size();
}
/// Registers the part functions of C at start-up in every process running this binary.
template <class C>
inline const bool kItemsRegistered = (runtime::detail::register_items<C>(), true);

/// The sequences' common length; throws std::invalid_argument listing them when they differ.
std::size_t map_length(std::initializer_list<std::optional<std::size_t>> sizes);
}  // namespace client::detail

/// wait's answer: the futures done (successfully or not) when it returned, and the others,
/// each in the order given.
template <class T>
struct WaitResult {
  std::vector<Future<T>> done;
  std::vector<Future<T>> not_done;
};

/// What Client::rebalance did: the results now held by another worker, their bytes, and each
/// result or worker that did not move and why ("KEY: why", "worker W: not connected").
struct RebalanceResult {
  std::size_t moved = 0;
  std::uint64_t moved_bytes = 0;
  std::vector<std::string> failed;
};

/// Client::retire_workers could not retire some of the workers: what() names each and why;
/// the others were retired all the same (retired()).
class RetireError : public std::runtime_error {
 public:
  struct Failure {
    std::string worker;  ///< its address, or the name given
    std::string reason;
  };
  RetireError(std::vector<std::string> retired, std::vector<Failure> failures);
  const std::vector<std::string>& retired() const noexcept { return retired_; }
  const std::vector<Failure>& failures() const noexcept { return failures_; }

 private:
  std::vector<std::string> retired_;
  std::vector<Failure> failures_;
};

class Client {
  using TaskDraft = client::detail::TaskDraft;  // what the templates below build
  using TaskArg = client::detail::TaskArg;

 public:
  /// Connects to the scheduler at `address` (tcp://, inproc://, mpi://), retrying until
  /// options.connect_timeout. Throws comm::CommError with what failed.
  explicit Client(const std::string& address, ClientOptions options = {});
  /// Connects through a caller's registry (whose context is started and outlives the client);
  /// options.config and options.name are not read (the context has its own). Waits run that
  /// context's event loop if it has one thread and enable_driving().
  Client(comm::Registry& registry, const std::string& address, const ClientOptions& options = {});
  /// Connects to a cluster object's scheduler (`Client client{cluster}`): anything with a
  /// scheduler_address(), such as taskwire::SlurmCluster, which must outlive the client.
  template <class Cluster, class = decltype(std::declval<const Cluster&>().scheduler_address())>
  explicit Client(const Cluster& cluster, ClientOptions options = {})
      : Client(cluster.scheduler_address(), std::move(options)) {}
  /// Reads the scheduler's address from a scheduler file written by taskwire-scheduler,
  /// waiting up to options.connect_timeout for the file to appear (then as long again for
  /// the connect); throws std::runtime_error naming the file when it does not.
  static Client from_scheduler_file(const std::string& path, ClientOptions options = {});

  /// Runs fn(args...) in the cluster. Future arguments are dependencies. A
  /// std::vector<Future<T>> fills a std::vector<T> parameter: the task gets every result, in
  /// order, and depends on each (as Dask takes a list of futures); an empty vector gives an
  /// empty one. A failed one fails the task, which names it (TaskError::raised_by()).
  template <class R, class... A, class... Args>
  Future<R> submit(R (*fn)(A...), Args&&... args) {
    return submit(SubmitOptions{}, fn, std::forward<Args>(args)...);
  }
  template <class R, class... A, class... Args>
  Future<R> submit(const SubmitOptions& options, R (*fn)(A...), Args&&... args) {
    static_assert(sizeof...(A) == sizeof...(Args), "submit: wrong number of arguments");
    std::vector<runtime::Frame> frames;
    auto spec = make_spec<R, A...>(fn, frames, std::forward<Args>(args)...);
    apply(options, options.key, spec, frames);
    return Future<R>(submit_drafts({std::move(spec)}, std::move(frames)).at(0));
  }

  /// fn applied to every element, sent to the scheduler as one graph message: one task per
  /// index, as Dask's client.map(fn, xs, ys). With several sequences (one per parameter, all
  /// of one length; otherwise std::invalid_argument naming the lengths) the i-th task is
  /// fn(xs[i], ys[i], ...). An element may be a Future (a dependency), or a
  /// std::vector<Future<T>> for a std::vector<T> parameter. fixed(x) in a parameter's place
  /// passes the same x (a value, sent once, or a Future) to every task:
  /// `client.map(partial_sums, chunks, taskwire::fixed(centroids))`.
  template <class R, class... A, class... Seqs>
  std::vector<Future<R>> map(R (*fn)(A...), const Seqs&... inputs) {
    return map(SubmitOptions{}, fn, inputs...);
  }
  template <class R, class... A, class... Seqs>
  std::vector<Future<R>> map(const SubmitOptions& options, R (*fn)(A...), const Seqs&... inputs) {
    static_assert(sizeof...(A) == sizeof...(Seqs),
                  "map: one sequence (or fixed(x)) per parameter of the function");
    static_assert((!is_fixed<Seqs>::value || ...), "map: at least one input must be a sequence");
    using client::detail::MapArg;
    const std::size_t n = client::detail::map_length({client::detail::map_input_size(inputs)...});
    std::vector<runtime::Frame> frames;
    // A fixed value is serialized once; every task's spec refers to that frame.
    std::tuple<MapArg<A, Seqs>...> args{MapArg<A, Seqs>(inputs, frames)...};
    std::vector<TaskDraft> specs;
    specs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      specs.push_back(std::apply(
          [&](const auto&... arg) { return make_spec<R, A...>(fn, frames, arg.at(i)...); }, args));
      apply(options, options.key.empty() ? std::string() : options.key + "-" + std::to_string(i),
            specs.back(), frames);
    }
    auto refs = submit_drafts(std::move(specs), std::move(frames));
    std::vector<Future<R>> out;
    out.reserve(refs.size());
    for (auto& r : refs) out.push_back(Future<R>(std::move(r)));
    return out;
  }

  /// A future to element `i` of f's result, a std::vector or std::array, as Dask's
  /// client.submit(operator.getitem, f, i): a built-in task, placed on a worker holding the
  /// result, copies out element i, reading the whole in place (no decode, no copy of the rest;
  /// docs/guide/cpp-api.md, "Parts of a result"). Pure: the same part of the same future is
  /// one task. An index out of range errs the task (std::out_of_range).
  template <class C>
  Future<typename C::value_type> getitem(const Future<C>& f, std::size_t i) {
    static_assert(runtime::detail::ItemAccess<C>::value && runtime::detail::ItemAccess<C>::kRuntimeIndex,
                  "getitem(f, i): f must be a Future of a std::vector or std::array; "
                  "use getitem<I>(f) for a tuple or pair");
    std::vector<runtime::Frame> frames;
    auto spec = item_spec<C>(f, std::nullopt);
    spec.args.push_back({TaskArg::frame, static_cast<std::uint32_t>(frames.size()), {}});
    frames.push_back(runtime::to_frame(static_cast<std::uint64_t>(i)));
    spec.key = item_key(spec, frames);
    auto handles = submit_drafts({std::move(spec)}, std::move(frames));
    return Future<typename C::value_type>(std::move(handles.at(0)));
  }
  /// Element I of a std::tuple, std::pair or std::array result, as getitem(f, i).
  template <std::size_t I, class C>
  Future<std::tuple_element_t<I, C>> getitem(const Future<C>& f) {
    static_assert(runtime::detail::ItemAccess<C>::value, "getitem<I>(f): f must be a Future of "
                  "a std::tuple, std::pair or std::array");
    if constexpr (runtime::detail::ItemAccess<C>::kRuntimeIndex) {
      return getitem(f, I);
    } else {
      auto spec = item_spec<C>(f, I);
      spec.key = item_key(spec, {});
      return Future<std::tuple_element_t<I, C>>(submit_drafts({std::move(spec)}, {}).at(0));
    }
  }
  /// Every part of a tuple, pair or array result as a future of its own (Dask's nout, Ray's
  /// num_returns), submitted as one message: `auto [lo, hi] = client.unpack(f);`. Each
  /// consumer then fetches only its part. A std::tuple of futures (std::array for an array).
  template <class C>
  auto unpack(const Future<C>& f) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (runtime::detail::ItemAccess<C>::kRuntimeIndex) {
        auto parts = unpack(f, sizeof...(I));
        return std::array<Future<typename C::value_type>, sizeof...(I)>{parts[I]...};
      } else {
        std::vector<TaskDraft> specs;
        ((specs.push_back(item_spec<C>(f, I)), specs.back().key = item_key(specs.back(), {})), ...);
        auto refs = submit_drafts(std::move(specs), {});
        return std::tuple<Future<std::tuple_element_t<I, C>>...>{
            Future<std::tuple_element_t<I, C>>(refs[I])...};
      }
    }(std::make_index_sequence<std::tuple_size_v<C>>{});
  }
  /// The first `n` elements of a std::vector (or std::array) result as futures of their own,
  /// submitted as one message: the pieces of a split, each sent on to its own consumer.
  template <class C>
  std::vector<Future<typename C::value_type>> unpack(const Future<C>& f, std::size_t n) {
    std::vector<runtime::Frame> frames;
    std::vector<TaskDraft> specs;
    specs.reserve(n);
    frames.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      specs.push_back(item_spec<C>(f, std::nullopt));
      specs.back().args.push_back({TaskArg::frame, static_cast<std::uint32_t>(i), {}});
      frames.push_back(runtime::to_frame(static_cast<std::uint64_t>(i)));
      specs.back().key = item_key(specs.back(), frames);
    }
    auto refs = submit_drafts(std::move(specs), std::move(frames));
    std::vector<Future<typename C::value_type>> out;
    out.reserve(refs.size());
    for (auto& r : refs) out.push_back(Future<typename C::value_type>(std::move(r)));
    return out;
  }

  /// Results of `futures`, in order; throws the first TaskError.
  template <class T>
  std::vector<T> gather(const std::vector<Future<T>>& futures) {
    std::vector<std::string> keys;
    keys.reserve(futures.size());
    for (const auto& f : futures) keys.push_back(f.key());
    auto frames = results(keys);
    if constexpr (std::is_same_v<T, runtime::Frame>) {
      return frames;  // the results' bytes, not decoded
    } else {
      std::vector<T> out;
      out.reserve(frames.size());
      for (const auto& fr : frames) out.push_back(runtime::from_frame<T>(fr));
      return out;
    }
  }

  /// Places `value` in the cluster as one piece of data (a vector too: one future for all of
  /// it); tasks given the future read it where it is. The bytes go from this client straight
  /// to a worker (the one holding the fewest bytes; options.workers, options.broadcast), and
  /// the scheduler only records who holds them, as Dask's scatter(direct=True). With no
  /// worker connected yet they go through the scheduler, to the first worker free.
  template <class T>
  Future<T> scatter(const T& value, const ScatterOptions& options = {}) {
    return Future<T>(
        scatter_frames({runtime::to_frame(value)}, options.workers, options.broadcast).at(0));
  }
  /// Places each element of `values` in the cluster separately, spread evenly over the
  /// workers by bytes (16 equal chunks on 2 workers: 8 each): one future per element, in
  /// order. As scatter otherwise.
  template <class T>
  std::vector<Future<T>> scatter_each(const std::vector<T>& values,
                                      const ScatterOptions& options = {}) {
    std::vector<runtime::Frame> frames;
    frames.reserve(values.size());
    for (const auto& v : values) frames.push_back(runtime::to_frame(v));
    auto refs = scatter_frames(std::move(frames), options.workers, options.broadcast);
    std::vector<Future<T>> out;
    out.reserve(refs.size());
    for (auto& r : refs) out.push_back(Future<T>(std::move(r)));
    return out;
  }

  /// Blocks until every future is done (successfully or not).
  template <class T>
  void wait(const std::vector<Future<T>>& futures) {
    for (const auto& f : futures) f.wait();
  }
  /// Like Ray's wait: blocks until options.count of `futures` are done or options.timeout
  /// passes, then splits them into done and not done. Costs O(n) whatever the count.
  template <class T>
  WaitResult<T> wait(const std::vector<Future<T>>& futures, const WaitOptions& options) {
    std::vector<std::string> keys;
    keys.reserve(futures.size());
    for (const auto& f : futures) keys.push_back(f.key());
    const auto done = wait_keys(keys, options.count, options.timeout);
    WaitResult<T> out;
    for (std::size_t i = 0; i < futures.size(); ++i)
      (done[i] ? out.done : out.not_done).push_back(futures[i]);
    return out;
  }
  /// Blocks until one of `pending` is done; removes it from `pending` and returns it. Costs
  /// O(pending) per call: to take many in turn, use as_completed.
  template <class T>
  Future<T> next_completed(std::vector<Future<T>>& pending) {
    std::vector<std::string> keys;
    for (const auto& f : pending) keys.push_back(f.key());
    auto i = wait_any(keys);
    Future<T> f = pending.at(i);
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    return f;
  }
  /// `futures` in the order they finish, each yielded as soon as it is done:
  /// `for (auto& f : client.as_completed(futures))`; more may be add()ed meanwhile
  /// (AsCompleted, client/future.hpp).
  template <class T>
  AsCompleted<T> as_completed(const std::vector<Future<T>>& futures) {
    return AsCompleted<T>(completion_queue(), futures);  // a moved-from client throws here
  }

  /// Cancels the tasks of `futures` and what depends on them; their get() then throws
  /// TaskError. Without `force`, a task another client also holds a future to keeps running
  /// for it: this client only lets go of it. With `force`, it is cancelled for every client.
  template <class T>
  void cancel(const std::vector<Future<T>>& futures, bool force = false) {
    std::vector<std::string> keys;
    for (const auto& f : futures) keys.push_back(f.key());
    cancel_keys(keys, force);
  }

  /// The cluster as the scheduler sees it now: its workers (threads, memory, tasks running and
  /// queued there), its clients and its tasks per state. Waits up to `timeout` for the answer;
  /// throws comm::CommError (timeout, or the connection to the scheduler is gone).
  SchedulerInfo scheduler_info(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// Retires `workers` (addresses or names, as scheduler_info() lists them) without losing
  /// anything, as Dask's Client.retire_workers: nothing new goes to them, the tasks they have
  /// not started run elsewhere, those they run finish there, and each result they hold the
  /// only copy of is copied to another worker; then they close (a nanny does not restart
  /// them). Nothing is recomputed. Returns their addresses once they are gone. Throws
  /// RetireError naming each that could not be retired and why (not connected; lost
  /// meanwhile; no other worker to take its data: it then runs on as before), and
  /// comm::CommError when the scheduler is gone or did not answer within `timeout` (none:
  /// as long as the running tasks take).
  std::vector<std::string> retire_workers(
      const std::vector<std::string>& workers,
      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  /// The same for `count` workers the scheduler chooses, as Dask's workers_to_close: idle
  /// ones first, then those holding the fewest bytes; fewer when fewer are connected and
  /// not retiring already.
  std::vector<std::string> retire_workers(
      std::size_t count, std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  /// Evens out the bytes the workers hold, as Dask's Client.rebalance: those above the mean
  /// send their largest results to those below, a result moving only while both come nearer
  /// the mean; each move is a copy the recipient fetches, then the sender's copy freed (a
  /// result a task on its worker still reads stays). `keys` limits what moves (all results
  /// in memory when empty), `workers` (addresses or names) who takes part (all when empty;
  /// never a paused or retiring worker). Returns once every move is done or failed; throws
  /// comm::CommError when the scheduler is gone or did not answer within `timeout`.
  RebalanceResult rebalance(const std::vector<std::string>& keys = {},
                            const std::vector<std::string>& workers = {},
                            std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  /// The same for the results of `futures`.
  template <class T>
  RebalanceResult rebalance(const std::vector<Future<T>>& futures,
                            const std::vector<std::string>& workers = {},
                            std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    std::vector<std::string> keys;
    keys.reserve(futures.size());
    for (const auto& f : futures) keys.push_back(f.key());
    return rebalance(keys, workers, timeout);
  }

  /// Submits `tasks` as one graph message (TaskDescription); one future per task, in order,
  /// whose get() returns the result's bytes (as<T>() reads them as a T). Throws
  /// std::invalid_argument for a Result that names no earlier task.
  std::vector<Future<runtime::Frame>> submit_tasks(std::vector<TaskDescription> tasks);
  /// This client's submission counter: each submit takes the next value, and among tasks of
  /// equal SubmitOptions::priority a lower one runs first. TaskDescription::order places
  /// tasks relative to it (e.g. a graph's tasks at next_order() plus their depth-first rank).
  std::int64_t next_order();

  /// Stops the scheduler and every worker (each exits 0), acknowledged by the scheduler.
  void shutdown();

  /// Name under which the scatter helper is registered in every process (data sent through
  /// the scheduler when no worker is connected).
  static constexpr const char* kIdentity = "taskwire::identity";

 private:
  // The connection; a clear error instead of a null dereference for a moved-from Client.
  client::ClientCore& core() const;

  // What the templates above need of the connection, out of line (client.cpp): this header
  // sees neither ClientCore nor the wire protocol.
  std::string new_key(const std::string& function);
  /// Sends `tasks` as one graph (split as the comm limits need); a handle per task, in order.
  std::vector<client::detail::KeyHandle> submit_drafts(std::vector<TaskDraft> tasks,
                                                       std::vector<runtime::Frame> frames);
  std::vector<runtime::Frame> results(const std::vector<std::string>& keys);
  std::vector<client::detail::KeyHandle> scatter_frames(std::vector<runtime::Frame> frames,
                                                        const std::vector<std::string>& workers,
                                                        bool broadcast);
  /// Waits as wait(futures, options) does; whether each key was done then, in order.
  std::vector<bool> wait_keys(const std::vector<std::string>& keys, std::size_t count,
                              std::optional<std::chrono::milliseconds> timeout);
  std::size_t wait_any(const std::vector<std::string>& keys);
  void cancel_keys(const std::vector<std::string>& keys, bool force);
  client::detail::CompletionQueue completion_queue();

  // A part of f's result: the built-in item function of C (element `index` of a tuple, or
  // the element given as the next argument), f its dependency. The program asking for parts
  // registers the function too (kItemsRegistered), for workers running this same binary.
  template <class C>
  TaskDraft item_spec(const Future<C>& f, std::optional<std::size_t> index) {
    (void)client::detail::kItemsRegistered<C>;
    TaskDraft spec;
    spec.function = runtime::detail::item_function_name<C>(index);
    spec.args.push_back({TaskArg::dependency, 0, f.key()});
    spec.dependencies.push_back(f.key());
    spec.priority = next_order();
    return spec;
  }
  /// "getitem-<hash of the function, the future's key and the index>": the same part of the
  /// same result is one task, whoever asks (Dask names getitem tasks alike).
  static std::string item_key(const TaskDraft& spec, const std::vector<runtime::Frame>& frames);

  // `key` replaces the generated one unless empty; then options.pure does.
  static void apply(const SubmitOptions& options, const std::string& key, TaskDraft& spec,
                    const std::vector<runtime::Frame>& frames) {
    if (!key.empty()) {
      spec.key = key;
    } else if (options.pure) {
      spec.key = pure_key(spec, frames);
    }
    spec.options = options;
  }
  /// "<function>-<hash>": SHA-256 (the first 128 bits) of the function's name and of each
  /// argument, its serialized bytes or the key of the future passed.
  static std::string pure_key(const TaskDraft& spec, const std::vector<runtime::Frame>& frames);

  template <class R, class... A, class... Args>
  TaskDraft make_spec(R (*fn)(A...), std::vector<runtime::Frame>& frames, Args&&... args) {
    TaskDraft spec;
    spec.function = runtime::FunctionRegistry::global().name_of(reinterpret_cast<const void*>(fn));
    spec.key = new_key(spec.function);
    spec.priority = next_order();
    std::vector<std::int64_t> layout;  // per parameter: kOneArgument, or a list's length
    add_args<A...>(spec, frames, layout, std::forward<Args>(args)...);
    if (std::any_of(layout.begin(), layout.end(),
                    [](std::int64_t n) { return n != runtime::kOneArgument; }))
      use_list_form(spec, frames, layout);
    return spec;
  }

  /// Calls the function's list form (runtime::kListFormSuffix), its layout first.
  static void use_list_form(TaskDraft& spec, std::vector<runtime::Frame>& frames,
                            const std::vector<std::int64_t>& layout);

  template <class... A>
  void add_args(TaskDraft&, std::vector<runtime::Frame>&, std::vector<std::int64_t>&) {}

  template <class A0, class... A, class Arg0, class... Args>
  void add_args(TaskDraft& spec, std::vector<runtime::Frame>& frames,
                std::vector<std::int64_t>& layout, Arg0&& arg, Args&&... rest) {
    using Param = std::remove_cv_t<std::remove_reference_t<A0>>;
    using ArgT = std::remove_cv_t<std::remove_reference_t<Arg0>>;
    if constexpr (std::is_same_v<ArgT, client::detail::FrameAt>) {
      spec.args.push_back({TaskArg::frame, arg.index, {}});
      layout.push_back(runtime::kOneArgument);
    } else if constexpr (is_future<ArgT>::value) {
      static_assert(std::is_same_v<typename ArgT::value_type, Param>,
                    "a Future<T> argument must match the parameter type T");
      spec.args.push_back({TaskArg::dependency, 0, arg.key()});
      spec.dependencies.push_back(arg.key());
      layout.push_back(runtime::kOneArgument);
    } else if constexpr (is_future_vector<ArgT>::value) {
      static_assert(std::is_same_v<std::vector<typename ArgT::value_type::value_type>, Param>,
                    "a std::vector<Future<T>> argument must match a std::vector<T> parameter");
      for (const auto& f : arg) {
        spec.args.push_back({TaskArg::dependency, 0, f.key()});
        spec.dependencies.push_back(f.key());
      }
      layout.push_back(static_cast<std::int64_t>(arg.size()));
    } else {
      spec.args.push_back({TaskArg::frame, static_cast<std::uint32_t>(frames.size()), {}});
      frames.push_back(runtime::to_frame(static_cast<const Param&>(Param(std::forward<Arg0>(arg)))));
      layout.push_back(runtime::kOneArgument);
    }
    add_args<A...>(spec, frames, layout, std::forward<Args>(rest)...);
  }

  std::shared_ptr<client::ClientCore> core_;
};


}  // namespace taskwire
