#pragma once
// A background thread that GETs /metrics from each URL once per interval, as a Prometheus
// server would, and the first URL's /json/dashboard?since=N as its page open in a browser
// does (for taskwire-bench tasks --dashboard on|compare). Its first scrape comes at a
// random point of the first interval: a Prometheus server's phase has nothing to do with when
// a workload starts, and a scrape always at the start would hit every short run.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace taskwire::bench {

class MetricsScraper {
 public:
  /// Starts scraping `urls` ("http://HOST:PORT") every `interval`, the first one after a
  /// random part of it.
  MetricsScraper(std::vector<std::string> urls, std::chrono::milliseconds interval);
  ~MetricsScraper();  ///< stops and joins
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  std::uint64_t scrapes() const;   ///< answered with 200
  std::uint64_t failures() const;  ///< anything else

 private:
  void run();
  std::vector<std::string> urls_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::uint64_t scrapes_ = 0, failures_ = 0;
  std::uint64_t page_since_ = 0;  ///< the page's last_seq, as the page keeps it
  std::thread thread_;
};

}  // namespace taskwire::bench
