#pragma once
// Summary statistics and output (sizes, CSV) shared by the benchmarks.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace taskwire::bench {

/// "64 KiB", "16 MiB", "1000 B".
inline std::string human_bytes(std::size_t n) {
  if (n >= (1u << 20) && n % (1u << 20) == 0) return fmt::format("{} MiB", n >> 20);
  if (n >= 1024 && n % 1024 == 0) return fmt::format("{} KiB", n >> 10);
  return fmt::format("{} B", n);
}

/// Seconds of the steady clock since t0.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The middle element (the upper one of an even count); v must not be empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The median of `v` and a distribution-free ~95 % confidence interval for it: the order
/// statistics n/2 -+ 0.98 sqrt(n) (the sign test's interval; it assumes only independent
/// samples, e.g. on/off ratios of pairs run back to back). With 10 samples or fewer the
/// interval is the whole range.
struct MedianInterval {
  double median = 0, low = 0, high = 0;
};

inline MedianInterval median_interval(std::vector<double> v) {
  MedianInterval m;
  if (v.empty()) return m;
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  const double half_width = 0.98 * std::sqrt(n);
  const auto at = [&](double rank) {  // rank counted from 1, clamped to the samples
    const double r = std::clamp(rank, 1.0, n);
    return v[static_cast<std::size_t>(r) - 1];
  };
  m.median = median(v);
  m.low = at(std::floor(n / 2 - half_width));
  m.high = at(std::ceil(n / 2 + 1 + half_width));
  return m;
}

struct Summary {
  double p50 = 0, p99 = 0, mean = 0;
};

inline Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(q * (v.size() - 1) + 0.5))]; };
  s.p50 = at(0.50);
  s.p99 = at(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / v.size();
  return s;
}

/// Appends rows to a CSV file, writing the header once when the file is new or empty.
class CsvWriter {
 public:
  CsvWriter(const std::string& path, const std::string& header) {
    if (path.empty()) return;
    std::ifstream probe(path);
    const bool fresh = !probe.good() || probe.peek() == std::ifstream::traits_type::eof();
    std::string first_line;
    if (!fresh && std::getline(probe, first_line) && first_line != header)
      throw std::runtime_error("CSV file '" + path + "' has the columns " + first_line +
                               ", this run writes " + header + ": give another file");
    out_.open(path, std::ios::app);
    if (!out_) throw std::runtime_error("cannot open CSV file '" + path + "' for writing");
    if (fresh) out_ << header << '\n';
  }
  void row(const std::string& line) {
    if (out_.is_open()) out_ << line << '\n' << std::flush;
  }

 private:
  std::ofstream out_;
};

}  // namespace taskwire::bench
