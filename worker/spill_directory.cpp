#include <taskwire/worker/spill_directory.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

namespace taskwire::worker {
namespace {

constexpr std::string_view kPrefix = "taskwire-worker-";
constexpr const char* kLockFile = ".lock";

// Whether the directory's owner is gone: its lock file exists and nobody holds the lock.
// A directory without a lock file is left alone: it may be one being made right now.
bool abandoned(const std::filesystem::path& dir) {
  const int fd = ::open((dir / kLockFile).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

}  // namespace

int SpillDirectory::remove_abandoned(const std::filesystem::path& parent) {
  int removed = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(parent, ec), end; !ec && it != end;
       it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || !it->is_directory(ec) || !abandoned(it->path())) continue;
    std::error_code rm;
    const auto files = std::filesystem::remove_all(it->path(), rm);
    if (rm) {
      spdlog::warn("worker: cannot remove {}, left by a worker that is gone: {}",
                   it->path().string(), rm.message());
      continue;
    }
    spdlog::info("worker: removed {} ({} files), left by a worker that is gone",
                 it->path().string(), files);
    ++removed;
  }
  return removed;
}

SpillDirectory SpillDirectory::make(std::filesystem::path parent) {
  std::error_code ec;
  if (parent.empty()) parent = std::filesystem::temp_directory_path(ec);
  if (ec || parent.empty()) parent = "/tmp";
  std::filesystem::create_directories(parent, ec);  // an error shows in mkdtemp's below
  remove_abandoned(parent);
  std::string pattern = (parent / (std::string(kPrefix) + "XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error(fmt::format(
        "worker: cannot make a directory for spilled results in {} (--local-directory): {}",
        parent.string(), std::strerror(errno)));
  SpillDirectory made;
  made.path_ = pattern;
  // Locked under another name, then renamed: the lock file appears already held. Created and
  // then locked under its own name, another worker starting at that moment (a second process
  // on the same directory) could take the free lock for an abandoned one's and remove the
  // directory under its new owner.
  const auto unnamed = made.path_ / ".lock-being-made";
  made.lock_fd_ = ::open(unnamed.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (made.lock_fd_ < 0 || ::flock(made.lock_fd_, LOCK_EX | LOCK_NB) != 0 ||
      ::rename(unnamed.c_str(), (made.path_ / kLockFile).c_str()) != 0) {
    const int err = errno;
    made.remove();
    throw std::runtime_error(fmt::format("worker: cannot lock its spill directory {}: {}",
                                         pattern, std::strerror(err)));
  }
  return made;
}

SpillDirectory::~SpillDirectory() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

SpillDirectory::SpillDirectory(SpillDirectory&& other) noexcept
    : path_(std::move(other.path_)), lock_fd_(std::exchange(other.lock_fd_, -1)) {
  other.path_.clear();
}

SpillDirectory& SpillDirectory::operator=(SpillDirectory&& other) noexcept {
  if (this != &other) {
    if (lock_fd_ >= 0) ::close(lock_fd_);
    path_ = std::move(other.path_);
    other.path_.clear();
    lock_fd_ = std::exchange(other.lock_fd_, -1);
  }
  return *this;
}

void SpillDirectory::remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  if (ec)
    spdlog::warn("worker: cannot remove its spill directory {}: {}", path_.string(), ec.message());
}

}  // namespace taskwire::worker
