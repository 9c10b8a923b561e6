#include <taskwire/worker/memory_limits.hpp>

#include <fmt/format.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace taskwire::worker {
namespace {

/// The number in a cgroup limit file; nullopt for "max", a missing file or nonsense.
std::optional<std::uint64_t> cgroup_limit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    std::size_t used = 0;
    const auto value = std::stoull(text, &used);
    if (used != text.size()) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::uint64_t system_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  std::uint64_t memory = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) *
                                                     static_cast<std::uint64_t>(page)
                                               : 0;
  auto lower_to = [&memory](std::uint64_t limit) {
    if (limit > 0 && (memory == 0 || limit < memory)) memory = limit;
  };
  for (const char* path :
       {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"})
    if (auto limit = cgroup_limit(path)) lower_to(*limit);
  rlimit rss{};
  if (::getrlimit(RLIMIT_RSS, &rss) == 0 && rss.rlim_cur != RLIM_INFINITY)
    lower_to(static_cast<std::uint64_t>(rss.rlim_cur));
  return memory;
}

std::uint64_t auto_memory_limit(unsigned nthreads) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double share = std::min(1.0, static_cast<double>(std::max(1u, nthreads)) / cores);
  return static_cast<std::uint64_t>(static_cast<double>(system_memory_bytes()) * share);
}

std::uint64_t parse_memory_limit(std::string_view text, unsigned nthreads, std::string_view what) {
  const std::string s = lower(text);
  if (s == "auto") return auto_memory_limit(nthreads);
  if (s == "none" || s == "0") return 0;
  auto bad = [&](std::string_view why) {
    return std::invalid_argument(fmt::format(
        "{} '{}': {} (give bytes like 4e9, 4GB or 4GiB, a fraction of the machine's memory "
        "like 0.5, auto, or none)",
        what, text, why));
  };
  double number = 0;
  std::size_t used = 0;
  try {
    number = std::stod(s, &used);
  } catch (const std::exception&) {
    throw bad("not a number");
  }
  if (!std::isfinite(number) || number < 0) throw bad("not a size");
  const std::string unit = s.substr(used);
  static const std::array<std::pair<const char*, double>, 13> kUnits{{
      {"", 1}, {"b", 1}, {"k", 1e3}, {"kb", 1e3}, {"m", 1e6}, {"mb", 1e6}, {"g", 1e9},
      {"gb", 1e9}, {"tb", 1e12}, {"kib", 1024.0}, {"mib", 1048576.0},
      {"gib", 1073741824.0}, {"tib", 1099511627776.0}}};
  const auto it = std::find_if(kUnits.begin(), kUnits.end(),
                               [&](const auto& u) { return unit == u.first; });
  if (it == kUnits.end()) throw bad(fmt::format("unknown unit '{}'", unit));
  if (unit.empty() && number <= 1)  // Dask: a float at most 1 is a fraction of the memory
    return static_cast<std::uint64_t>(number * static_cast<double>(system_memory_bytes()));
  return static_cast<std::uint64_t>(number * it->second);
}

void check_memory_fractions(const MemoryOptions& o) {
  const std::array<std::pair<const char*, double>, 4> steps{
      {{"target", o.target}, {"spill", o.spill}, {"pause", o.pause}, {"terminate", o.terminate}}};
  double previous = 0;
  const char* previous_name = nullptr;
  for (const auto& [name, value] : steps) {
    if (!(value >= 0 && value <= 1))
      throw std::invalid_argument(
          fmt::format("memory {} fraction {} is not between 0 (off) and 1", name, value));
    if (value == 0) continue;
    if (value < previous)
      throw std::invalid_argument(fmt::format(
          "memory {} fraction {} is below the {} fraction {}", name, value, previous_name,
          previous));
    previous = value;
    previous_name = name;
  }
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) value /= 1024, ++unit;
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

}  // namespace taskwire::worker
