#pragma once
// runtime::Context: one per process (or per independent component in tests). Owns the
// io_context every comm, timer and server of that component runs on, the threads that run
// it, and the configuration. Thread-safety: all members are safe to call from any thread.
#include <taskwire/runtime/asio.hpp>
#include <taskwire/runtime/config.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace taskwire::runtime {

class UrgentWork;

class Context {
 public:
  /// `threads` is how many threads start() runs the io_context on (at least 1).
  explicit Context(Config config = Config::from_env(), unsigned threads = 1);
  ~Context();  ///< stop() and join
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  asio::io_context& io() noexcept { return io_; }
  asio::any_io_executor executor() noexcept { return io_.get_executor(); }
  const Config& config() const noexcept { return config_; }
  Config& mutable_config() noexcept { return config_; }  ///< before start() only

  /// Starts the threads (idempotent). The io_context keeps running while idle.
  void start();
  /// Lets the threads finish: stops the io_context and joins them. Idempotent.
  /// Must not be called from one of the context's own threads.
  void stop();
  bool running_in_this_thread() noexcept { return io_.get_executor().running_in_this_thread(); }
  /// The count post_urgent keeps for this context's io_context (looked up once).
  UrgentWork& urgent() noexcept { return *urgent_; }

  /// The calling thread runs the io_context in place of the context's own thread, which
  /// waits (parked) until the Drive is gone. A thread that blocks until a reply arrives
  /// (Future::get) then wakes up itself when the reply's bytes do, instead of being woken
  /// by the io thread after it ran the handler: one wake-up less per round trip.
  /// Handlers still run one at a time (MPI_THREAD_SERIALIZED holds). (context_drive.cpp)
  class Drive {
   public:
    Drive(Drive&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}
    Drive(const Drive&) = delete;
    Drive& operator=(const Drive&) = delete;
    Drive& operator=(Drive&&) = delete;
    ~Drive();  ///< hands the io_context back to the context's thread (see enable_driving)
    /// Runs at most one handler, waiting for one until `deadline`. False when none ran
    /// (the deadline passed, or the context was stopped).
    bool run_one_until(std::chrono::steady_clock::time_point deadline);
    /// Runs at most one handler that is ready now (after a look at the sockets).
    bool poll_one();

   private:
    friend class Context;
    explicit Drive(Context& ctx) noexcept : ctx_(&ctx) {}
    Context* ctx_;
  };
  /// A Drive, if the calling thread may have one: the context runs on one thread of its own,
  /// started, with enable_driving(); the caller is not a handler of it; no other thread drives; the own thread
  /// parks before `deadline` (it finishes the handler it runs first). Otherwise nullopt, and
  /// the caller waits as it would have (its waits are woken by handlers as before).
  std::optional<Drive> try_drive(
      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());
  /// Lets threads take the loop with try_drive(): the own thread then runs the io_context
  /// handler by handler (~14 ns more per handler than io_context::run(), which a context
  /// nobody drives keeps: a scheduler's, a worker's). For a client's context; call before
  /// start(). `linger`: how long the own thread stays parked after a Drive ends (0: it
  /// resumes at once; at most 1 s). A Drive within that time takes the loop back without a
  /// wake-up of that thread: a submit().get() loop then runs on the calling thread alone.
  /// Meanwhile nothing serves the loop (handlers posted then wait for the next Drive or the
  /// linger's end; lingers in a row end 10 ms after the own thread parked), so a linger only
  /// for a context that does nothing but that thread's work (not a pool's scheduler).
  void enable_driving(std::chrono::microseconds linger = {}) noexcept;

  /// While one exists, a Drive that ends does not linger, and a linger under way ends: for
  /// a thread about to wait for work the own thread must do (a synchronous read, a wait
  /// on a condition a handler signals) rather than drive.
  class Awake {
   public:
    Awake(Awake&& other) noexcept : ctx_(std::exchange(other.ctx_, nullptr)) {}
    Awake(const Awake&) = delete;
    Awake& operator=(const Awake&) = delete;
    Awake& operator=(Awake&&) = delete;
    ~Awake();

   private:
    friend class Context;
    explicit Awake(Context& ctx) noexcept : ctx_(&ctx) {}
    Context* ctx_;
  };
  Awake keep_awake();

 private:
  using Clock = std::chrono::steady_clock;
  void run_thread();
  void park();
  /// Runs `run` (one of io_context's run functions) and returns what it returns; a handler
  /// that throws is logged (a bug in that handler) and counts as one run.
  template <class Run>
  std::size_t run_logged(Run run);

  Config config_;
  unsigned nthreads_;
  asio::io_context io_;
  UrgentWork* urgent_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::vector<std::thread> threads_;

  // Driving (single-thread contexts): the own thread parks while driven_ or lingering.
  std::mutex park_mu_;
  std::condition_variable park_cv_;
  bool drivable_ = false;  // enable_driving() was called
  bool started_ = false;   // the own thread runs (or parks)
  bool driven_ = false;    // a Drive exists
  bool parked_ = false;    // the own thread is out of the io_context
  int awake_ = 0;          // Awake objects
  std::uint64_t drives_ = 0;                     // Drives so far
  std::chrono::microseconds linger_{0};
  Clock::time_point parked_since_{};
  Clock::time_point linger_until_{};             // after a Drive: parked until then
  Clock::time_point wakes_at_ = Clock::time_point::max();  // the parked thread's next look
  std::atomic<bool> drive_wanted_{false};  // driven_, read without the lock per handler
};

/// Per execution context: how many handlers posted with post_urgent have not run (nor been
/// dropped unrun) yet. A handler that keeps an io thread for a while, the MPI poll driver
/// polling in bursts (comm/mpi/mpi_poll_driver.cpp), returns while this is not zero, so that
/// such work does not wait out the burst.
class UrgentWork : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;
  explicit UrgentWork(asio::execution_context& context) : service(context) {}
  std::int64_t pending() const noexcept { return pending_.load(std::memory_order_acquire); }
  static UrgentWork& of(asio::execution_context& context) {
    return asio::use_service<UrgentWork>(context);
  }

  /// Counts one handler from its post until it runs or is destroyed unrun.
  class Token {
   public:
    explicit Token(UrgentWork& work) noexcept : work_(&work) {
      work_->pending_.fetch_add(1, std::memory_order_release);
    }
    Token(Token&& other) noexcept : work_(std::exchange(other.work_, nullptr)) {}
    Token(const Token&) = delete;
    Token& operator=(const Token&) = delete;
    Token& operator=(Token&&) = delete;
    ~Token() { done(); }
    void done() noexcept {
      if (auto* w = std::exchange(work_, nullptr))
        w->pending_.fetch_sub(1, std::memory_order_release);
    }

   private:
    UrgentWork* work_;
  };

 private:
  void shutdown() override {}
  std::atomic<std::int64_t> pending_{0};
};

/// asio::post, for work whose latency matters: a hop of an in-process comm, a client's
/// submission, a task result from a pool thread. `work` is the count of the executor's
/// execution context (UrgentWork::of it, or Context::urgent(); kept by callers on hot paths,
/// as the lookup takes asio's service-registry lock).
template <class Executor, class F>
void post_urgent(UrgentWork& work, const Executor& executor, F&& f) {
  asio::post(executor, [token = UrgentWork::Token(work), f = std::forward<F>(f)]() mutable {
    token.done();
    f();
  });
}
template <class Executor, class F>
void post_urgent(const Executor& executor, F&& f) {
  post_urgent(UrgentWork::of(asio::query(executor, asio::execution::context)), executor,
              std::forward<F>(f));
}

}  // namespace taskwire::runtime
