#pragma once
// What a worker process is doing, kept where it survives the process: the tasks each thread
// is running, the worker's name and address. A fatal signal handler prints the running task
// before the process dies (an abort() or segfault otherwise leaves no trace), and a nanny,
// which maps the same record from a memfd it passes down, reads it after its child died to
// tell the scheduler which tasks were running.
//
// Writers: the threads that run tasks, each in its own slot (claimed by thread id). Readers:
// the signal handler (its own thread's slot) and the nanny (after the child is gone), so no
// lock is needed; the strings are cut to the slot's size.
#include <taskwire/runtime/process_info.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace taskwire::worker::crash {

inline constexpr std::size_t kSlots = 64;         ///< threads recorded at once; more: not recorded
inline constexpr std::size_t kKeyBytes = 200;      ///< longer keys are cut
inline constexpr std::size_t kFunctionBytes = 120;
/// Set by the nanny for its child: the descriptor of the memfd holding the Record.
inline constexpr const char* kRecordFdVariable = "TASKWIRE_NANNY_RECORD_FD";

struct Slot {
  std::atomic<std::int32_t> tid{0};  ///< 0: free; -1: being written; else the running thread
  char key[kKeyBytes];
  char function[kFunctionBytes];
};

struct Record {
  std::atomic<std::uint32_t> magic{0};
  std::atomic<std::int32_t> registered{0};  ///< the worker joined its scheduler
  std::atomic<std::int32_t> nanny_pid{0};   ///< the nanny that made it; 0: the process's own
  char name[128];
  char address[256];
  Slot slots[kSlots];
};

/// The record this process writes: the one in the memfd named by TASKWIRE_NANNY_RECORD_FD if
/// that is set (and valid), else one of its own.
Record& current();

/// The pid of the nanny whose record this process writes (the process's parent when it
/// started), or 0 when no nanny started it.
std::int32_t nanny_pid();

/// Marks the thread as running `key` (function `function`) until destroyed.
class RunningTask {
 public:
  RunningTask(std::string_view key, std::string_view function) noexcept;
  ~RunningTask();
  RunningTask(const RunningTask&) = delete;
  RunningTask& operator=(const RunningTask&) = delete;

 private:
  Slot* slot_ = nullptr;
};

struct RunningEntry {
  std::string key, function;
};
/// The tasks running in this process now (or, in a nanny's record, when its child stopped).
std::vector<RunningEntry> running_in(const Record& record);

/// Called once the worker has registered: its name and address, for the nanny's report.
void set_identity(std::string_view name, std::string_view address);

/// Installs handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT that write
/// "<who>: fatal signal SIGSEGV (Segmentation fault) while running task 'k' (function f)" to
/// stderr, then die of the same signal. `who` names the process ("taskwire-worker w2",
/// "rank 3"); it is copied.
void install_fatal_signal_handlers(std::string_view who);

/// "SIGSEGV (Segmentation fault)", for any signal number.
using runtime::describe_signal;

/// The nanny's side: a record in a memfd that a child inherits.
class SharedRecord {
 public:
  SharedRecord();  ///< throws std::system_error
  ~SharedRecord();
  SharedRecord(const SharedRecord&) = delete;
  SharedRecord& operator=(const SharedRecord&) = delete;

  int fd() const noexcept { return fd_; }
  void reset() noexcept;  ///< before each child starts
  bool registered() const noexcept;
  std::string name() const;
  std::string address() const;
  std::vector<RunningEntry> running() const { return running_in(*record_); }

 private:
  int fd_ = -1;
  Record* record_ = nullptr;
};

}  // namespace taskwire::worker::crash
