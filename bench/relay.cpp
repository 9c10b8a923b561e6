#include "bench/relay.hpp"

#include "bench/stats.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace taskwire::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The hops of one round trip, by the index of the word (spinning) or pipe (sleeping) each
// uses: client -> scheduler, scheduler -> worker, worker -> scheduler, scheduler -> client.
enum Hop { to_scheduler, to_worker, from_worker, to_client, kHops };

struct Channel {
  virtual ~Channel() = default;
  virtual void send(Hop hop, int i) = 0;
  virtual void receive(Hop hop, int i) = 0;
};

struct Pipes final : Channel {
  int fd[kHops][2];
  Pipes() {
    for (auto& p : fd) p[0] = p[1] = -1;
    for (auto& p : fd)
      if (::pipe(p) != 0) {
        close_all();
        throw std::runtime_error("pipe() failed");
      }
  }
  ~Pipes() override { close_all(); }
  void close_all() {
    for (auto& p : fd)
      for (int& f : p)
        if (f >= 0) ::close(std::exchange(f, -1));
  }
  void send(Hop hop, int) override {
    const char c = 0;
    if (::write(fd[hop][1], &c, 1) != 1) std::_Exit(3);
  }
  void receive(Hop hop, int) override {
    char c;
    if (::read(fd[hop][0], &c, 1) != 1) std::_Exit(3);
  }
};

// One page of memory shared with the children forked after it is made.
class SharedPage {
 public:
  SharedPage()
      : p_(::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)) {
    if (p_ == MAP_FAILED) throw std::runtime_error("mmap() failed");
  }
  ~SharedPage() { ::munmap(p_, kSize); }
  SharedPage(const SharedPage&) = delete;
  SharedPage& operator=(const SharedPage&) = delete;
  void* get() const noexcept { return p_; }

 private:
  static constexpr std::size_t kSize = 4096;
  void* p_;
};

struct SharedWords final : Channel {
  static constexpr std::size_t kStride = 64 / sizeof(std::atomic<int>);  // a cache line each
  SharedPage page;
  std::atomic<int>* words = new (page.get()) std::atomic<int>[kHops * kStride]();
  void send(Hop hop, int i) override { words[hop * kStride].store(i, std::memory_order_release); }
  void receive(Hop hop, int i) override {
    while (words[hop * kStride].load(std::memory_order_acquire) != i) ::sched_yield();
  }
};

// The relay's children: killed with the parent (PR_SET_PDEATHSIG: a spinning child would
// otherwise poll forever), and killed and reaped should the parent's measurement throw.
class Children {
 public:
  Children() = default;
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children() {
    for (pid_t k : pids_) ::kill(k, SIGKILL);
    wait_all();
  }
  template <class F>
  void spawn(F body) {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork() failed");
    if (pid == 0) {
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) std::_Exit(4);
      body();
      std::_Exit(0);
    }
    pids_.push_back(pid);
  }
  /// Reaps every child; how many did not exit with status 0.
  int wait_all() {
    int failed = 0;
    for (pid_t k : pids_) {
      int status = 0;
      ::waitpid(k, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
    pids_.clear();
    return failed;
  }

 private:
  std::vector<pid_t> pids_;
};

/// Microseconds per round trip, over `n` round trips.
double measure(Channel& ch, int n, bool spinning) {
  SharedPage page;  // outlives the children (declared first)
  auto* idle_done = new (page.get()) std::atomic<bool>(false);
  Children kids;
  kids.spawn([&] {  // the scheduler: forwards both ways
    for (int i = 1; i <= n; ++i) {
      ch.receive(to_scheduler, i);
      ch.send(to_worker, i);
      ch.receive(from_worker, i);
      ch.send(to_client, i);
    }
  });
  kids.spawn([&] {  // the worker that runs the task
    for (int i = 1; i <= n; ++i) {
      ch.receive(to_worker, i);
      ch.send(from_worker, i);
    }
  });
  kids.spawn([&] {  // the other worker: idle, but it polls too when spinning
    while (!idle_done->load()) {
      if (spinning) ::sched_yield();
      else ::usleep(1000);
    }
  });
  const auto t0 = Clock::now();
  for (int i = 1; i <= n; ++i) {
    ch.send(to_scheduler, i);
    ch.receive(to_client, i);
  }
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n;
  idle_done->store(true);
  if (kids.wait_all() != 0) throw std::runtime_error("a relay process failed");
  return us;
}

}  // namespace

int run_relay(const RelayOptions& o) {
  if (o.roundtrips < 1 || o.repeats < 1)
    throw std::invalid_argument("--roundtrips and --repeats must be at least 1");
  CsvWriter csv(o.csv, "mode,processes,roundtrips,us_per_roundtrip");
  fmt::print("zero-work round trip client -> scheduler -> worker -> scheduler -> client, "
             "4 processes, {} cores; median of {}\n",
             std::max(1u, std::thread::hardware_concurrency()), o.repeats);
  fmt::print("{:<10} {:>12}\n", "mode", "us/roundtrip");
  for (const bool spinning : {false, true}) {
    std::vector<double> runs;
    for (int r = 0; r < o.repeats; ++r) {
      std::unique_ptr<Channel> ch;
      if (spinning) ch = std::make_unique<SharedWords>();
      else ch = std::make_unique<Pipes>();
      runs.push_back(measure(*ch, o.roundtrips, spinning));
    }
    const double us = summarize(runs).p50;
    const char* mode = spinning ? "spinning" : "sleeping";
    fmt::print("{:<10} {:>12.1f}\n", mode, us);
    csv.row(fmt::format("{},4,{},{:.3f}", mode, o.roundtrips, us));
  }
  return 0;
}

}  // namespace taskwire::bench
