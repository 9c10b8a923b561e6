#include <taskwire/http/prometheus_text.hpp>

#include <fmt/format.h>

#include <cmath>

namespace taskwire::http {

namespace {

void append_escaped(std::string& out, std::string_view value, bool quote_too) {
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote_too) out += "\\\"";
    else out += c;
  }
}

void append_value(std::string& out, double v) {
  if (std::isnan(v)) out += "NaN";
  else if (std::isinf(v)) out += v > 0 ? "+Inf" : "-Inf";
  else if (v == std::floor(v) && std::fabs(v) < 1e15) fmt::format_to(std::back_inserter(out), "{}", static_cast<long long>(v));
  else fmt::format_to(std::back_inserter(out), "{}", v);
}

}  // namespace

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  append_escaped(out_, help, false);
  fmt::format_to(std::back_inserter(out_), "\n# TYPE {} {}\n", name, type);
}

void PrometheusText::write_labels(Labels labels, std::string_view le) {
  if (labels.size() == 0 && le.empty()) return;
  out_ += '{';
  bool first = true;
  for (const auto& [key, value] : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += key;
    out_ += "=\"";
    append_escaped(out_, value, true);
    out_ += '"';
  }
  if (!le.empty()) fmt::format_to(std::back_inserter(out_), "{}le=\"{}\"", first ? "" : ",", le);
  out_ += '}';
}

void PrometheusText::sample(std::string_view name, double value, Labels labels) {
  out_ += name;
  write_labels(labels);
  out_ += ' ';
  append_value(out_, value);
  out_ += '\n';
}

void PrometheusText::histogram(std::string_view name, const runtime::DurationHistogram& h,
                               Labels labels) {
  const auto& bounds = runtime::DurationHistogram::kBounds;
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    fmt::format_to(std::back_inserter(out_), "{}_bucket", name);
    write_labels(labels, i < bounds.size() ? fmt::format("{}", bounds[i]) : "+Inf");
    fmt::format_to(std::back_inserter(out_), " {}\n", h.cumulative(i));
  }
  sample(fmt::format("{}_sum", name), h.sum(), labels);
  sample(fmt::format("{}_count", name), static_cast<double>(h.count()), labels);
}

void PrometheusText::single(std::string_view name, std::string_view type, std::string_view help,
                            double value) {
  family(name, type, help);
  sample(name, value);
}

}  // namespace taskwire::http
