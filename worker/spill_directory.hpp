#pragma once
// A worker's directory for spilled results, and the clean-up of those that dead workers left.
//
// Each directory holds a lock file that its worker keeps locked (flock) while it lives. A
// worker making its directory first removes every sibling whose lock nobody holds: its
// worker died without removing it (SIGKILL, a crash, the memory limit's terminate), and its
// files would otherwise fill the disk the new worker spills to. A lock, not a pid, says who
// is alive: pids are reused, and a lock dies with its process whatever the cause.
#include <filesystem>

namespace taskwire::worker {

class SpillDirectory {
 public:
  SpillDirectory() = default;  ///< none: the worker does not spill
  /// Removes the dead workers' directories in `parent` (the temporary directory if empty),
  /// then makes and locks a fresh "taskwire-worker-XXXXXX" there. Throws std::runtime_error
  /// naming `parent` when it cannot be made.
  static SpillDirectory make(std::filesystem::path parent);
  ~SpillDirectory();  ///< releases the lock (the directory itself: see remove())
  SpillDirectory(SpillDirectory&& other) noexcept;
  SpillDirectory& operator=(SpillDirectory&& other) noexcept;
  SpillDirectory(const SpillDirectory&) = delete;
  SpillDirectory& operator=(const SpillDirectory&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  bool empty() const noexcept { return path_.empty(); }
  /// Removes the directory and everything in it (a warning if it cannot); idempotent.
  void remove() noexcept;

  /// Removes the directories of dead workers in `parent`; returns how many went.
  static int remove_abandoned(const std::filesystem::path& parent);

 private:
  std::filesystem::path path_;
  int lock_fd_ = -1;
};

}  // namespace taskwire::worker
