#include <taskwire/http/task_stream_json.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iterator>
#include <string_view>
#include <unordered_map>

namespace taskwire::http {

namespace {

std::string json_string(std::string_view s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Functions and workers repeat from entry to entry: each is escaped once a reply.
class QuotedNames {
 public:
  const std::string& operator()(const std::string& name) {
    auto it = names_.find(name);
    if (it == names_.end()) it = names_.emplace(name, json_string(name)).first;
    return it->second;
  }

 private:
  std::unordered_map<std::string_view, std::string> names_;  // views into the entries
};

void append_seconds(std::string& out, double seconds) {
  if (std::isfinite(seconds)) fmt::format_to(std::back_inserter(out), "{}", seconds);
  else out += "null";  // as nlohmann writes a NaN or an infinity
}

}  // namespace

void append_task_stream_json(std::string& out, std::span<const TaskStreamEntry> entries) {
  QuotedNames names;
  out.reserve(out.size() + entries.size() * 200);
  out += '[';
  for (const TaskStreamEntry& e : entries) {
    if (&e != entries.data()) out += ',';
    fmt::format_to(std::back_inserter(out), R"({{"seq":{},"key":{},"function":{},"worker":{},"thread":{},"start":)",
                   e.seq, json_string(e.key), names(e.function), names(e.worker), e.lane);
    append_seconds(out, e.start);
    out += R"(,"stop":)";
    append_seconds(out, e.stop);
    out += R"(,"transfer_seconds":)";
    append_seconds(out, e.transfer_seconds);
    fmt::format_to(std::back_inserter(out), R"(,"nbytes":{},"erred":{},"transfer":{}}})", e.nbytes,
                   e.erred, e.transfer);
  }
  out += ']';
}

}  // namespace taskwire::http
