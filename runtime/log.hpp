#pragma once
// Logging set-up over spdlog. Components log through spdlog's default logger.
#include <chrono>
#include <string>

namespace taskwire::runtime {

struct LogOptions {
  std::string level = "warn";  ///< trace, debug, info, warn, error, critical, off
  /// Optional log file; "{rank}" is replaced by the MPI rank (or "0" outside mpiexec) and
  /// "{pid}" by the process id, so `--log-file 'rank{rank}.log'` gives one file per rank.
  std::string file;
  /// Shown in every line as "[rank N]". -1: the launcher's (runtime/launch_env.hpp: PMI_RANK
  /// first, SLURM_PROCID last); outside a launch (a daemon started by hand) none is shown.
  int rank = -1;
  /// Append to the file instead of starting it afresh (a worker under a nanny shares the
  /// nanny's file, and a restarted worker must not erase its predecessor's last words).
  bool append = false;
};

/// The longest a line logged below warn may wait in the log file's buffer; warnings and
/// errors are flushed as they are logged.
inline constexpr std::chrono::seconds kLogFlushInterval{1};

/// Installs the default logger (stderr, plus the file if set), flushed on every warning and
/// at least every kLogFlushInterval (by spdlog's flusher thread). Throws
/// std::invalid_argument for an unknown level, std::runtime_error if the file cannot be opened.
void init_logging(const LogOptions& options);

/// The rank of this process in its launch, from the launcher's environment (launch_env.hpp);
/// 0 outside one.
int launcher_rank();

/// The line pattern init_logging() sets: time, "[rank N]" when `rank` >= 0, level, message.
std::string log_pattern(int rank);

}  // namespace taskwire::runtime
