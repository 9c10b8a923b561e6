#pragma once
// The non-template part of the client: the scheduler connection, the state of every key the
// client holds, data fetches from workers. Thread-safety: every public member may be called
// from any user thread; network work runs on the context's io thread, or on a user thread
// that waits for results while it waits (see block()).
// Not installed: no public header includes it; Client and Future reach it only from
// client/client.cpp and client/future.cpp, so it may change without breaking programs.
#include <taskwire/client/callback_runner.hpp>
#include <taskwire/client/client.hpp>
#include <taskwire/client/outbox.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/context.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskwire::client {

/// Keys in the order they finished, for as_completed and wait(count): each watched key is
/// appended once it is done (memory, erred, cancelled, lost), in O(1) as its report arrives.
/// Read and written only under the core's lock: through ClientCore::next_completion and
/// wait_completions.
struct Completions {
  std::deque<std::string> done;
};

/// One reference to a key; the last one to go releases the key in the cluster.
class KeyRef {
 public:
  KeyRef(std::shared_ptr<ClientCore> core, std::string key);
  ~KeyRef();
  KeyRef(const KeyRef&) = delete;
  KeyRef& operator=(const KeyRef&) = delete;
  const std::string& key() const noexcept { return key_; }
  ClientCore& core() const noexcept { return *core_; }

 private:
  std::shared_ptr<ClientCore> core_;
  std::string key_;
};

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  /// Owns a Context (one io thread) and a Registry with the built-in backends.
  static std::shared_ptr<ClientCore> connect(const std::string& address, ClientOptions options);
  /// Uses a caller's registry (its context must be started and outlive the client).
  static std::shared_ptr<ClientCore> connect(comm::Registry& registry, const std::string& address,
                                             const ClientOptions& options);
  ~ClientCore();

  std::string new_key(const std::string& function);
  std::int64_t next_priority();
  /// Sends `tasks` as update_graph operations (one, or as many as the comm limits need: see
  /// split_graph) and holds every key in `tasks`; the references follow the order of `tasks`.
  /// A key whose submission cannot be sent errs, saying why.
  std::vector<std::shared_ptr<KeyRef>> submit(std::vector<protocol::TaskSpec> tasks,
                                              std::vector<runtime::Frame> frames);
  /// Holds a reference to `key` (a submission's, or a scattered key's).
  std::shared_ptr<KeyRef> hold(const std::string& key);
  /// Places each frame on a worker, straight from here (client/scatter.cpp): on those named
  /// in `workers` (addresses or names; empty: any connected; none of them connected:
  /// std::invalid_argument), each on the one holding the fewest bytes, or with `broadcast`
  /// on every one; then tells the scheduler who holds what. With no worker connected, or
  /// for a worker that cannot be reached, the data goes through the scheduler as a task
  /// returning it. One reference per frame, in order.
  std::vector<std::shared_ptr<KeyRef>> scatter(std::vector<runtime::Frame> frames,
                                               const std::vector<std::string>& workers,
                                               bool broadcast);
  /// Which frames go to which of the workers holding `held` bytes: the least loaded by
  /// bytes, ties round robin; all of them to each with `broadcast`.
  static std::vector<std::vector<std::size_t>> place_evenly(
      const std::vector<std::uint64_t>& held, const std::vector<runtime::Frame>& frames,
      bool broadcast);
  /// The built-in task of a scattered key, run only if its data was lost: it errs saying so.
  static constexpr const char* kScatteredFunction = "taskwire::scattered";
  /// Built in (runtime/function_registry.cpp): returns its argument, data sent with the task.
  static constexpr const char* kIdentityFunction = "taskwire::identity";

  /// Blocks until the key is done (memory, erred, cancelled, lost) or `timeout` passes.
  bool wait(const std::string& key, std::optional<std::chrono::milliseconds> timeout);
  KeyStatus status(const std::string& key);
  /// For an erred key: the task that raised (the key, or a dependency) and what it raised.
  std::pair<std::string, std::string> failure_origin(const std::string& key);
  /// Blocks until done; returns the result frame or throws TaskError / comm::CommError.
  runtime::Frame result(const std::string& key);
  /// The same for many keys at once: one get_data per worker holding some of them.
  std::vector<runtime::Frame> results(const std::vector<std::string>& keys);
  /// Waits until any of `keys` is done; returns its index.
  std::size_t wait_any(const std::vector<std::string>& keys);

  using Completions = client::Completions;
  using Deadline = std::optional<std::chrono::steady_clock::time_point>;
  /// Appends each of `keys` to c.done once it is done (at once if it is, or if this client
  /// does not hold it). A key watched twice is appended twice.
  void watch(const std::shared_ptr<Completions>& c, const std::vector<std::string>& keys);
  /// Blocks until c.done holds a key, then removes and returns the first one.
  std::string next_completion(Completions& c);
  /// Blocks until c.done holds `count` keys or the deadline passes; returns how many it holds.
  std::size_t wait_completions(Completions& c, std::size_t count, Deadline deadline);
  /// Runs `callback` on the client's callback thread once `key` is done (soon, if it is
  /// already, or if this client does not hold the key). What it throws is logged.
  void on_done(const std::string& key, std::function<void()> callback);

  /// Asks the scheduler to cancel `keys` (and what depends on them). Without `force`, a key
  /// another client also wants only stops being wanted by this one, and keeps running.
  void cancel(const std::vector<std::string>& keys, bool force);
  /// The statuses of `keys`, in order, read at once.
  std::vector<KeyStatus> statuses(const std::vector<std::string>& keys);
  /// Asks the scheduler for a snapshot of the cluster and waits up to `timeout` for it; throws
  /// comm::CommError (timeout, or the connection to the scheduler is gone).
  protocol::SchedulerInfo scheduler_info(std::chrono::milliseconds timeout);
  /// Asks the scheduler to retire `workers` (addresses or names) and `count` more of its
  /// choice, and waits for the answer (protocol::RetireWorkersRequest) up to `timeout` (none:
  /// as long as it takes); throws comm::CommError (timeout, or the connection to the
  /// scheduler is gone).
  protocol::RetireWorkersReply retire_workers(
      const std::vector<std::string>& workers, std::size_t count,
      std::optional<std::chrono::milliseconds> timeout);
  /// Asks the scheduler to even out the bytes its workers hold (protocol::RebalanceRequest)
  /// and waits for the answer, as retire_workers does.
  protocol::RebalanceReply rebalance(const std::vector<std::string>& keys,
                                     const std::vector<std::string>& workers,
                                     std::optional<std::chrono::milliseconds> timeout);
  /// Asks the scheduler to stop itself and every worker; waits for its acknowledgement.
  void shutdown(std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000));
  void close();

  void release(const std::string& key);  ///< by KeyRef
  /// How long a release may wait for another message to the scheduler before it leaves on
  /// its own (default 2 ms; see release()).
  void set_release_delay(std::chrono::milliseconds delay);

 private:
  ClientCore();
  void start(comm::CommPtr scheduler);
  void read_loop();
  void on_batch(const runtime::Message& m);
  void send(std::function<void(Outbox&)> add);
  void post_flush_locked();
  /// Starts the wait after which queued releases leave alone (see release()); on the io side.
  void arm_release_timer();
  /// Moves the pending releases into out_ as one release_keys operation; out_mu_ held.
  void add_releases_locked();
  /// Everything queued for the scheduler, in order (pending releases last); out_mu_ held.
  std::vector<Outbox::Outgoing> take_out_locked();
  void flush();
  /// Writes the messages in order; one past the comm limits, or whose write fails, is not
  /// sent and fails the keys it carried. `after_last` (if any) runs once every write is done.
  void write_out(std::vector<Outbox::Outgoing> messages, std::function<void()> after_last = {});
  /// Errs the pending `keys` with `why`: their submission never reached the scheduler.
  void fail_unsent(const std::vector<std::string>& keys, const std::string& why);
  struct WorkerLink {
    std::mutex mu;  // one get_data round trip at a time on this comm
    comm::CommPtr comm;
  };
  std::shared_ptr<WorkerLink> worker_link(const std::string& address);
  /// Time left of an exchange's deadline (at least 1 ms).
  using TimeLeft = std::function<std::chrono::milliseconds()>;
  /// One request and its answer on the link to the worker at `address` (connected if need
  /// be; the connect, the write and the read share `allowed`). A kept connection that fails
  /// (its worker died, maybe restarted on the same address) is tried once more on a fresh
  /// one, unless it timed out. Throws what the last try threw.
  void exchange_with_worker(const std::string& address, std::chrono::milliseconds allowed,
                            const std::function<void(const comm::CommPtr&, const TimeLeft&)>& exchange);
  /// One get_data exchange on `comm`; throws on any failure (the caller aborts the comm).
  void get_data(const comm::CommPtr& comm, const std::string& address,
                const std::vector<std::string>& keys, const TimeLeft& left,
                std::map<std::string, runtime::Frame>& out);
  /// Fetches keys from one holder, in requests of at most kFetchBatchBytes of results
  /// (fetch.cpp); fills `out` for the keys it had. A holder that has not answered a request
  /// within fetch_time_allowed(its keys) counts as gone for this fetch (CommError); the keys
  /// of requests answered before stay in `out`.
  void fetch_from(const std::string& address, const std::vector<std::string>& keys,
                  std::map<std::string, runtime::Frame>& out);
  /// `keys` in order, cut into runs of at most kFetchBatchBytes by their reported sizes (a
  /// key larger than that alone).
  std::vector<std::vector<std::string>> fetch_batches(const std::vector<std::string>& keys);
  /// Results a get_data asks one worker for at most, by their reported sizes: the worker
  /// serializes them all before it replies, beside the live values it keeps.
  static constexpr std::uint64_t kFetchBatchBytes = std::uint64_t{16} << 20;
  std::vector<std::size_t> send_to_worker(const std::string& address,
                                          const std::vector<std::string>& keys,
                                          const std::vector<runtime::Frame>& frames,
                                          const std::vector<std::size_t>& placed,
                                          std::vector<protocol::ScatteredKey>& where);
  /// fetch_timeout_, plus 1 s per 100 MB of the keys' reported sizes.
  std::chrono::milliseconds fetch_time_allowed(const std::vector<std::string>& keys);
  /// fetch_timeout_, plus 1 s per 100 MB.
  std::chrono::milliseconds time_allowed(std::uint64_t bytes) const;
  void fail_all(const std::string& why);
  /// Sends `request` (its request_id set here) and waits for the reply of that id, which
  /// on_batch files in `waiting`; throws comm::CommError as scheduler_info does.
  template <class Reply, class Request>
  Reply request_reply(std::map<std::uint64_t, std::optional<Reply>>& waiting, protocol::Op op,
                      Request request, std::optional<std::chrono::milliseconds> timeout,
                      std::string_view what);
  /// Waits (mu_ held through `lock`) until done() or the deadline; true if done(). The calling
  /// thread runs the context's event loop meanwhile when it may (runtime::Context::Drive), so
  /// that a reply wakes it directly; otherwise it waits on cv_.
  template <class Pred>
  bool block(std::unique_lock<std::mutex>& lock, Pred done, Deadline deadline = std::nullopt);
  /// block() for the members defined in other files (key_watch.cpp).
  bool block_until(std::unique_lock<std::mutex>& lock, const std::function<bool()>& done,
                   Deadline deadline);
  /// One round of results(): waits for each key, then fetches what the client does not hold.
  /// `seen` gets the report count each fetched location came from.
  /// `lost` gets the holders that do not have their key (see try_holder).
  void fetch_results(const std::vector<std::string>& keys, std::map<std::string, runtime::Frame>& got,
                     std::map<std::string, std::uint64_t>& seen,
                     std::vector<protocol::MissingData>& lost);
  void try_holder(const std::string& holder, const std::vector<std::string>& keys,
                  std::map<std::string, runtime::Frame>& got,
                  std::vector<protocol::MissingData>& lost, bool warn);
  /// Waits (up to fetch_timeout_) for a new report on each key; throws TaskError if none comes.
  /// Tells the scheduler that these holders do not have these keys (protocol::MissingData).
  void report_missing(const std::vector<protocol::MissingData>& reports);
  void await_news(const std::vector<std::string>& keys, const std::map<std::string, std::uint64_t>& seen);

  struct KeyState {
    KeyStatus status = KeyStatus::pending;
    std::string message;
    std::string blamed_key, cause;  // erred: see failure_origin
    std::string exception_type, worker, worker_address;  // erred: see TaskError::Origin
    std::vector<std::string> holders;
    std::uint64_t nbytes = 0;  // as the scheduler reported it
    std::optional<runtime::Frame> data;  // cached once fetched
    std::uint64_t reports = 0;           // scheduler reports on the key so far
    int refs = 0;
    std::vector<std::weak_ptr<Completions>> watchers;  // told once it is done (see watch())
    std::vector<std::function<void()>> callbacks;      // run once it is done (see on_done())
  };
  /// The key has just become done: tells its watchers and hands its callbacks to the
  /// callback thread. mu_ held.
  void settled_locked(const std::string& key, KeyState& st);

  std::unique_ptr<runtime::Context> own_context_;
  std::unique_ptr<comm::Registry> own_registry_;
  comm::Registry* registry_ = nullptr;
  runtime::Context* context_ = nullptr;  // the registry's; outlives it in an mpi cluster rank
  std::chrono::milliseconds fetch_timeout_{10'000};  // ClientOptions::fetch_timeout
  std::string name_;
  // 128 random bits in every key this client makes: its name (a pid, a user's choice) may
  // be another client's too, and keys that meet by accident are each other's results.
  const std::string id_;
  comm::CommPtr scheduler_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, KeyState> keys_;
  std::map<std::string, std::shared_ptr<WorkerLink>> workers_;
  std::string broken_;  // set when the scheduler connection is gone
  bool shutdown_acked_ = false;
  // scheduler_info requests waiting for their reply, by request id (empty: not answered yet).
  std::map<std::uint64_t, std::optional<protocol::SchedulerInfo>> info_requests_;
  // retire_workers requests waiting for their reply, the same way (ids from info_counter_).
  std::map<std::uint64_t, std::optional<protocol::RetireWorkersReply>> retire_requests_;
  std::map<std::uint64_t, std::optional<protocol::RebalanceReply>> rebalance_requests_;
  std::uint64_t info_counter_ = 0;
  std::uint64_t counter_ = 0;
  std::int64_t priority_ = 0;
  CallbackRunner callbacks_;  // done-callbacks run there, never on the io thread

  std::mutex out_mu_;
  Outbox out_;
  // Released keys wait here and leave as one release_keys operation (one scheduler event,
  // one free_keys per worker) before any other operation and at each flush, so the order of
  // operations is kept.
  std::vector<std::string> releases_;
  bool flush_posted_ = false;
  bool release_timer_set_ = false;
  std::chrono::milliseconds release_delay_{2};
  std::optional<asio::steady_timer> release_timer_;  // on the scheduler comm's executor
};

}  // namespace taskwire::client
