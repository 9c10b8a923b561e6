#pragma once
// Running a batch system's command (sbatch, scancel, squeue) from a program that has threads:
// posix_spawn, not fork, so nothing but exec runs in the child.
#include <chrono>
#include <string>
#include <vector>

namespace taskwire::launch {

struct CommandResult {
  int status = -1;     ///< exit status; 128 + signal when killed by one; -1 not started
  std::string output;  ///< stdout and stderr, interleaved
};

/// Runs argv[0] (looked up on PATH) with `input` on its stdin, and returns once it exits.
/// Past `timeout` it is SIGKILLed and the result says so. Throws std::runtime_error when it
/// cannot be started (not found, not executable).
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          std::chrono::milliseconds timeout);

/// `word` as one word for a POSIX shell: as it is when nothing in it is special, else in
/// single quotes (a quote inside written '\'').
std::string shell_quote(const std::string& word);

/// argv as a shell reads it back (each argument shell_quote'd), for job scripts and messages.
std::string command_line(const std::vector<std::string>& argv);

}  // namespace taskwire::launch
