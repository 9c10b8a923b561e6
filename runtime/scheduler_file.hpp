#pragma once
// The scheduler file: how clients and workers find a scheduler started elsewhere (as in
// Dask's --scheduler-file). A small JSON object: {"address": "...", "addresses": [...]} where
// "address" is the preferred contact address and "addresses" every transport it listens on.
#include <string>
#include <vector>

namespace taskwire::runtime {

struct SchedulerFile {
  std::vector<std::string> addresses;  ///< first is the preferred one

  /// Writes atomically (temp file + rename). Throws std::runtime_error.
  void write(const std::string& path) const;
  /// Throws std::runtime_error saying what is wrong with the file.
  static SchedulerFile read(const std::string& path);
  /// The first address with this scheme ("tcp", "mpi"); or the preferred one if none.
  std::string address_for(const std::string& scheme) const;
};

}  // namespace taskwire::runtime
