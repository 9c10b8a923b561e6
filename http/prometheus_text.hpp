#pragma once
// taskwire::http::PrometheusText: writes the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): one # HELP and # TYPE per
// family, then its samples, label values escaped. The caller names families with their unit
// (`_seconds`, `_bytes`) and counters with `_total`.
#include <taskwire/runtime/histogram.hpp>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace taskwire::http {

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

using Labels = std::initializer_list<std::pair<std::string_view, std::string_view>>;

class PrometheusText {
 public:
  /// Starts a family; `type` is "counter", "gauge" or "histogram".
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, double value, Labels labels = {});
  /// The _bucket, _sum and _count samples of a histogram family `name`.
  void histogram(std::string_view name, const runtime::DurationHistogram& h, Labels labels = {});
  /// A one-sample family.
  void single(std::string_view name, std::string_view type, std::string_view help, double value);
  std::string take() { return std::move(out_); }

 private:
  void write_labels(Labels labels, std::string_view le = {});
  std::string out_;
};

}  // namespace taskwire::http
