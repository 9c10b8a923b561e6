#include <taskwire/runtime/scheduler_file.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <stdexcept>

namespace taskwire::runtime {

void SchedulerFile::write(const std::string& path) const {
  if (addresses.empty()) throw std::runtime_error("scheduler file: no address to write");
  nlohmann::json j{{"address", addresses.front()}, {"addresses", addresses}};
  if (!dashboard.empty()) j["dashboard"] = dashboard;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write scheduler file '" + tmp + "'");
    out << j.dump() << "\n";
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot move scheduler file into place at '" + path + "'");
}

SchedulerFile SchedulerFile::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open scheduler file '" + path + "': does it exist yet?");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("scheduler file '" + path + "' is not JSON: " + e.what());
  }
  const auto listed = j.find("addresses");
  if (!j.is_object() || listed == j.end() || !listed->is_array())
    throw std::runtime_error("scheduler file '" + path + "' has no \"addresses\" entry");
  SchedulerFile f;
  for (const auto& a : *listed)
    if (a.is_string() && a.get<std::string>().find("://") != std::string::npos)
      f.addresses.push_back(a.get<std::string>());
  if (f.addresses.empty())
    throw std::runtime_error("scheduler file '" + path + "' lists no address");
  if (const auto d = j.find("dashboard"); d != j.end() && d->is_string()) f.dashboard = *d;
  return f;
}

std::optional<SchedulerFile> SchedulerFile::wait_and_read(
    const std::string& path, std::optional<std::chrono::milliseconds> timeout,
    const std::function<bool()>& stop_requested) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kPoll = std::chrono::milliseconds(100);
  constexpr auto kLogInterval = std::chrono::seconds(5);
  const auto t0 = Clock::now();
  auto last_log = t0;
  bool logged_first = false;
  for (;;) {
    if (stop_requested && stop_requested()) return std::nullopt;
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return read(path);
    const auto now = Clock::now();
    const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - t0);
    if (timeout && now - t0 >= *timeout)
      throw std::runtime_error(fmt::format(
          "no scheduler file '{}' after {} s: is a scheduler started with --scheduler-file {}?",
          path, waited.count(), path));
    // Info every few seconds; the first miss at debug level only, since a scheduler started
    // with its workers writes its file a moment later.
    const bool first = !logged_first;
    if (first || now - last_log >= kLogInterval) {
      if (!first) last_log = now;
      logged_first = true;
      spdlog::log(first ? spdlog::level::debug : spdlog::level::info,
                  "waiting for the scheduler file {} ({} s): it does not exist yet", path,
                  waited.count());
    }
    // Polling: inotify would not see a file on another host's view of a shared file system.
    std::this_thread::sleep_for(kPoll);
  }
}

std::string SchedulerFile::address_for(const std::string& scheme) const {
  for (const auto& a : addresses)
    if (a.rfind(scheme + "://", 0) == 0) return a;
  return addresses.front();
}

}  // namespace taskwire::runtime
