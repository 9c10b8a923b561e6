#include <taskwire/runtime/process_info.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace taskwire::runtime {

std::uint64_t resident_set_bytes() noexcept {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size_pages = 0, resident_pages = 0;
  const int read = std::fscanf(f, "%llu %llu", &size_pages, &resident_pages);
  std::fclose(f);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (read != 2 || page <= 0) return 0;
  return static_cast<std::uint64_t>(resident_pages) * static_cast<std::uint64_t>(page);
}

std::uint64_t peak_resident_set_bytes() noexcept {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kib = 0;
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f))
    found = std::sscanf(line, "VmHWM: %llu kB", &kib) == 1;
  std::fclose(f);
  return found ? static_cast<std::uint64_t>(kib) * 1024 : 0;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

std::string describe_signal(int signo) {
  const char* abbrev = ::sigabbrev_np(signo);
  const char* text = ::sigdescr_np(signo);
  if (!abbrev) return fmt::format("signal {}", signo);
  return fmt::format("SIG{} ({})", abbrev, text ? text : "unknown");
}

}  // namespace taskwire::runtime
