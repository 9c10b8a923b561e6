#include "bench/scrape.hpp"

#include <taskwire/runtime/asio.hpp>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <random>

namespace taskwire::bench {

namespace {

namespace bhttp = boost::beast::http;

// One GET of `target` (e.g. "/metrics"); the body on 200, nullopt otherwise.
std::optional<std::string> http_get(asio::io_context& io, const std::string& url, const std::string& target) {
  const auto hostport = url.substr(url.find("//") + 2);
  const auto colon = hostport.rfind(':');
  try {
    asio::ip::tcp::resolver resolver(io);
    boost::beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(5));
    stream.connect(resolver.resolve(hostport.substr(0, colon), hostport.substr(colon + 1)));
    bhttp::request<bhttp::empty_body> request(bhttp::verb::get, target, 11);
    request.set(bhttp::field::host, hostport);
    bhttp::write(stream, request);
    boost::beast::flat_buffer buffer;
    bhttp::response<bhttp::string_body> response;
    bhttp::read(stream, buffer, response);
    if (response.result() != bhttp::status::ok || response.body().empty()) return std::nullopt;
    return std::move(response.body());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The page's next `since`: the reply's last_seq, or `before` if the reply has none.
std::uint64_t last_seq(const std::string& reply, std::uint64_t before) {
  const auto json = nlohmann::json::parse(reply, nullptr, false);
  const auto it = json.is_object() ? json.find("last_seq") : json.end();
  return it != json.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : before;
}

}  // namespace

MetricsScraper::MetricsScraper(std::vector<std::string> urls, std::chrono::milliseconds interval)
    : urls_(std::move(urls)), interval_(interval), thread_([this] { run(); }) {}

MetricsScraper::~MetricsScraper() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MetricsScraper::run() {
  asio::io_context io;
  std::unique_lock lock(mu_);
  std::uniform_int_distribution<std::int64_t> phase(0, interval_.count());
  std::random_device seed;
  std::minstd_rand random(seed());
  cv_.wait_for(lock, std::chrono::milliseconds(phase(random)), [this] { return stop_; });
  while (!stop_) {
    lock.unlock();
    std::uint64_t ok = 0, bad = 0;
    for (const auto& url : urls_) (http_get(io, url, "/metrics") ? ok : bad) += 1;
    if (!urls_.empty()) {  // the dashboard page, open on the first (the scheduler's)
      const auto page = http_get(io, urls_.front(), fmt::format("/json/dashboard?since={}", page_since_));
      (page ? ok : bad) += 1;
      if (page) page_since_ = last_seq(*page, page_since_);
    }
    lock.lock();
    scrapes_ += ok;
    failures_ += bad;
    cv_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

std::uint64_t MetricsScraper::scrapes() const {
  std::lock_guard lock(mu_);
  return scrapes_;
}

std::uint64_t MetricsScraper::failures() const {
  std::lock_guard lock(mu_);
  return failures_;
}

}  // namespace taskwire::bench
