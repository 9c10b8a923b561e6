#include <taskwire/runtime/scheduler_file.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace taskwire::runtime {

void SchedulerFile::write(const std::string& path) const {
  if (addresses.empty()) throw std::runtime_error("scheduler file: no address to write");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write scheduler file '" + tmp + "'");
    out << "{\"address\": \"" << addresses.front() << "\", \"addresses\": [";
    for (std::size_t i = 0; i < addresses.size(); ++i)
      out << (i ? ", " : "") << '"' << addresses[i] << '"';
    out << "]}\n";
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot move scheduler file into place at '" + path + "'");
}

SchedulerFile SchedulerFile::read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open scheduler file '" + path + "': does it exist yet?");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  SchedulerFile f;
  // Addresses never contain quotes; take every quoted string with "://" inside the array.
  auto arr = text.find("\"addresses\"");
  if (arr == std::string::npos)
    throw std::runtime_error("scheduler file '" + path + "' has no \"addresses\" entry");
  for (auto p = text.find('"', text.find('[', arr)); p != std::string::npos;) {
    auto q = text.find('"', p + 1);
    if (q == std::string::npos) break;
    auto s = text.substr(p + 1, q - p - 1);
    if (s.find("://") != std::string::npos) f.addresses.push_back(s);
    p = text.find('"', q + 1);
  }
  if (f.addresses.empty())
    throw std::runtime_error("scheduler file '" + path + "' lists no address");
  return f;
}

std::string SchedulerFile::address_for(const std::string& scheme) const {
  for (const auto& a : addresses)
    if (a.rfind(scheme + "://", 0) == 0) return a;
  return addresses.front();
}

}  // namespace taskwire::runtime
