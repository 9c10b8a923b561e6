#pragma once
// The scheduler file: how clients and workers find a scheduler started elsewhere (as in
// Dask's --scheduler-file). A small JSON object: {"address": "...", "addresses": [...],
// "dashboard": "http://..."} where "address" is the preferred contact address, "addresses"
// every transport it listens on, and "dashboard" (if it runs one) its dashboard's URL.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace taskwire::runtime {

struct SchedulerFile {
  std::vector<std::string> addresses;  ///< first is the preferred one
  /// The scheduler's dashboard URL ("dashboard" in the file; empty: none). The port it got,
  /// which differs from the one asked for when that was taken (as Dask's "services").
  std::string dashboard = {};

  /// Writes atomically (temp file + rename). Throws std::runtime_error.
  void write(const std::string& path) const;
  /// Throws std::runtime_error saying what is wrong with the file.
  static SchedulerFile read(const std::string& path);
  /// Blocking: read() once the file exists, checking every 100 ms, since a scheduler started
  /// with its workers writes it a moment later (Dask's workers wait the same way). Logs
  /// "waiting for the scheduler file F (N s)" at info level every few seconds (the first
  /// miss at debug level). Returns
  /// nullopt as soon as `stop_requested()` is true (a signal); throws std::runtime_error when
  /// `timeout` passes first (nullopt: no limit), or at once when the file exists but is
  /// malformed.
  static std::optional<SchedulerFile> wait_and_read(
      const std::string& path, std::optional<std::chrono::milliseconds> timeout,
      const std::function<bool()>& stop_requested = {});
  /// The first address with this scheme ("tcp", "mpi"); or the preferred one if none.
  std::string address_for(const std::string& scheme) const;
};

}  // namespace taskwire::runtime
