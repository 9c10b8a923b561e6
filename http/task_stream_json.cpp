#include <taskwire/http/task_stream_json.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>
#include <unordered_map>

namespace taskwire::http {

namespace {

// Plain printable ASCII, the common key, goes in as it is; anything else through nlohmann.
bool needs_escaping(std::string_view s) {
  return !std::all_of(s.begin(), s.end(), [](char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
}

void append_string(std::string& out, std::string_view s) {
  if (needs_escaping(s)) {
    out += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

// Functions and workers repeat from entry to entry: each is escaped once a reply.
class QuotedNames {
 public:
  const std::string& operator()(const std::string& name) {
    auto it = names_.find(name);
    if (it == names_.end()) {
      std::string quoted;
      append_string(quoted, name);
      it = names_.emplace(name, std::move(quoted)).first;
    }
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
    fmt::format_to(std::back_inserter(out), R"({{"seq":{},"key":)", e.seq);
    append_string(out, e.key);
    fmt::format_to(std::back_inserter(out), R"(,"function":{},"worker":{},"thread":{},"start":)",
                   names(e.function), names(e.worker), e.lane);
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
