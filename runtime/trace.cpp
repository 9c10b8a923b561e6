// The recorder behind runtime/trace.hpp: a ring of fixed-size events, written out at exit.
#include <taskwire/runtime/trace.hpp>

#include <fmt/format.h>

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace taskwire::runtime::trace {
namespace {

constexpr std::size_t kCapacity = std::size_t{1} << 20;
constexpr std::size_t kTextBytes = 40;

struct Event {
  std::uint64_t ns;
  std::uint32_t tid;
  What what;
  std::uint8_t op;
  std::uint8_t text_size;
  char text[kTextBytes];
};

struct Recorder {
  std::string directory;
  std::unique_ptr<Event[]> events{new Event[kCapacity]()};
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> stopped{false};  ///< set at exit: events recorded from then are dropped

  void write() {
    stopped.store(true);
    const char* rank = std::getenv("PMI_RANK");
    const std::string path = fmt::format("{}/trace-{}-{}.txt", directory, rank ? rank : "x",
                                         static_cast<long>(::getpid()));
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return;
    const std::uint64_t end = next.load();
    const std::uint64_t begin = end > kCapacity ? end - kCapacity : 0;
    static constexpr const char* kNames[] = {"queued", "sent",      "received", "sleep",
                                             "woken",  "task_start", "task_end"};
    for (std::uint64_t i = begin; i < end; ++i) {
      const Event& e = events[i % kCapacity];
      // A slot claimed by a thread still running as the process exits may be half written.
      const auto what = static_cast<std::size_t>(e.what);
      if (e.ns == 0 || what >= std::size(kNames)) continue;
      std::fprintf(f, "%llu %u %s %u %.*s\n", static_cast<unsigned long long>(e.ns), e.tid,
                   kNames[what], unsigned{e.op},
                   static_cast<int>(std::min<std::size_t>(e.text_size, kTextBytes)), e.text);
    }
    std::fclose(f);
  }
};

Recorder* recorder() noexcept {
  static Recorder* r = [] () -> Recorder* {
    const char* dir = std::getenv("TASKWIRE_TRACE");
    if (!dir || !*dir) return nullptr;
    auto* made = new Recorder{dir};
    std::atexit([] { recorder()->write(); });
    return made;
  }();
  return r;
}

}  // namespace

const bool kEnabled = recorder() != nullptr;

void record_slow(What what, std::uint8_t op, std::string_view text) noexcept {
  Recorder* r = recorder();
  if (r->stopped.load(std::memory_order_relaxed)) return;
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  thread_local const auto tid = static_cast<std::uint32_t>(::syscall(SYS_gettid));
  Event& e = r->events[r->next.fetch_add(1, std::memory_order_relaxed) % kCapacity];
  e.ns = static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
  e.tid = tid;
  e.what = what;
  e.op = op;
  // The tail: keys differ at their end ("<function>-<client>-<n>").
  const std::size_t n = std::min(text.size(), kTextBytes);
  e.text_size = static_cast<std::uint8_t>(n);
  if (n > 0) std::memcpy(e.text, text.data() + (text.size() - n), n);  // an empty view may be null
}

}  // namespace taskwire::runtime::trace
