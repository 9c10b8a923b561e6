#include <taskwire/worker/crash_record.hpp>

#include <fmt/format.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <new>
#include <system_error>

namespace taskwire::worker::crash {

namespace {
constexpr std::uint32_t kMagic = 0x74775243;  // "twRC"

void copy_cut(char* to, std::size_t size, std::string_view from) noexcept {
  const std::size_t n = std::min(size - 1, from.size());
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

Record* map_record(int fd) noexcept {
  void* p = ::mmap(nullptr, sizeof(Record), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<Record*>(p);
}

Record* inherited_record() noexcept {
  const char* text = std::getenv(kRecordFdVariable);
  if (!text || !*text) return nullptr;
  char* end = nullptr;
  const long fd = std::strtol(text, &end, 10);
  struct stat st {};
  if (*end != '\0' || fd < 0 || ::fstat(static_cast<int>(fd), &st) != 0 ||
      static_cast<std::size_t>(st.st_size) < sizeof(Record))
    return nullptr;
  Record* r = map_record(static_cast<int>(fd));
  if (r && r->magic.load() != kMagic) {
    ::munmap(r, sizeof(Record));
    return nullptr;
  }
  return r;
}

// The handler's state: set once before the handlers are installed, read only in them.
char g_who[160] = "taskwire";

const char* signal_name(int signo) noexcept {
  switch (signo) {
    case SIGSEGV: return "SIGSEGV (Segmentation fault)";
    case SIGBUS: return "SIGBUS (Bus error)";
    case SIGFPE: return "SIGFPE (Floating point exception)";
    case SIGILL: return "SIGILL (Illegal instruction)";
    case SIGABRT: return "SIGABRT (Aborted)";
    default: return "a fatal signal";
  }
}

// Async-signal-safe appends into a fixed buffer.
struct Line {
  char text[1024];
  std::size_t size = 0;
  void add(const char* s) noexcept {
    while (*s && size < sizeof(text) - 1) text[size++] = *s++;
  }
};

void on_fatal_signal(int signo) {
  Line line;
  line.add(g_who);
  line.add(": fatal signal ");
  line.add(signal_name(signo));
  const auto tid = static_cast<std::int32_t>(::gettid());
  Record& record = current();
  const Slot* own = nullptr;
  for (const Slot& s : record.slots)
    if (s.tid.load(std::memory_order_relaxed) == tid) own = &s;
  if (own) {
    line.add(" while running task '");
    line.add(own->key);
    line.add("' (function ");
    line.add(own->function);
    line.add(")");
  } else {
    line.add(" outside any task");
  }
  line.add("\n");
  [[maybe_unused]] auto written = ::write(STDERR_FILENO, line.text, line.size);
  std::raise(signo);  // SA_RESETHAND: the default action, once this handler returns
}
}  // namespace

Record& current() {
  static Record* const record = [] {
    if (Record* inherited = inherited_record()) return inherited;
    auto* own = new Record();  // lives as long as the process
    own->magic = kMagic;
    return own;
  }();
  return *record;
}

std::int32_t nanny_pid() { return current().nanny_pid.load(); }

RunningTask::RunningTask(std::string_view key, std::string_view function) noexcept {
  thread_local const auto tid = static_cast<std::int32_t>(::gettid());  // one system call a thread
  Record& record = current();
  for (Slot& s : record.slots) {
    std::int32_t free = 0;
    if (!s.tid.compare_exchange_strong(free, -1, std::memory_order_acquire)) continue;
    copy_cut(s.key, sizeof s.key, key);
    copy_cut(s.function, sizeof s.function, function);
    s.tid.store(tid, std::memory_order_release);
    slot_ = &s;
    return;
  }
}

RunningTask::~RunningTask() {
  if (slot_) slot_->tid.store(0, std::memory_order_release);
}

std::vector<RunningEntry> running_in(const Record& record) {
  std::vector<RunningEntry> out;
  for (const Slot& s : record.slots) {
    if (s.tid.load() <= 0) continue;
    out.push_back({std::string(s.key, ::strnlen(s.key, sizeof s.key)),
                   std::string(s.function, ::strnlen(s.function, sizeof s.function))});
  }
  return out;
}

void set_identity(std::string_view name, std::string_view address) {
  Record& record = current();
  copy_cut(record.name, sizeof record.name, name);
  copy_cut(record.address, sizeof record.address, address);
  record.registered.store(1, std::memory_order_release);
}

void install_fatal_signal_handlers(std::string_view who) {
  copy_cut(g_who, sizeof g_who, who);
  (void)current();  // resolve the record now, not in a handler
  struct sigaction action {};
  action.sa_handler = on_fatal_signal;
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(signo, &action, nullptr);
}

SharedRecord::SharedRecord() {
  fd_ = ::memfd_create("taskwire-nanny-record", 0);  // inherited by the child: no CLOEXEC
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
  if (::ftruncate(fd_, sizeof(Record)) != 0 || !(record_ = map_record(fd_))) {
    const int err = errno;
    ::close(fd_);
    throw std::system_error(err, std::generic_category(), "nanny record");
  }
  new (record_) Record();
  record_->magic = kMagic;
  record_->nanny_pid = static_cast<std::int32_t>(::getpid());
}

SharedRecord::~SharedRecord() {
  ::munmap(record_, sizeof(Record));
  ::close(fd_);
}

void SharedRecord::reset() noexcept {
  record_->registered = 0;
  record_->name[0] = record_->address[0] = '\0';
  for (Slot& s : record_->slots) s.tid = 0;
}

bool SharedRecord::registered() const noexcept { return record_->registered.load() != 0; }

std::string SharedRecord::name() const {
  return std::string(record_->name, ::strnlen(record_->name, sizeof record_->name));
}

std::string SharedRecord::address() const {
  return std::string(record_->address, ::strnlen(record_->address, sizeof record_->address));
}

}  // namespace taskwire::worker::crash
