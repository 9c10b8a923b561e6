#include "tests/graph/graph_functions.hpp"

#include <taskwire/runtime/function_registry.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

namespace graph_fns {

std::atomic<int> max_concurrent{0};
std::atomic<int> others_finished{0};
std::atomic<int> others_needed{0};

namespace {
std::atomic<int> active{0};
std::mutex threads_mu;
std::vector<std::size_t> threads;
}  // namespace

int square(int x) { return x * x; }
long widen_square(int x) { return static_cast<long>(x) * x; }
long sum(std::vector<long> v) { return std::accumulate(v.begin(), v.end(), 0L); }
std::string tag(int x) { return std::to_string(x) + ","; }

std::string concat(std::vector<std::string> parts) {
  {
    std::lock_guard lock(threads_mu);
    threads.push_back(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  }
  std::string out;
  for (auto& p : parts) out += p;
  return out;
}

std::string join_with(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

int fail_on_13(int x) {
  if (x == 13) throw std::runtime_error("bad input 13");
  return x;
}

std::string tag_or_fail(int x) { return tag(fail_on_13(x)); }
int unregistered(int x) { return x; }

std::string refuse(std::vector<std::string>) { throw std::runtime_error("combine refused"); }

int gauge(int x) {
  const int now = ++active;
  int seen = max_concurrent.load();
  while (now > seen && !max_concurrent.compare_exchange_weak(seen, now)) {
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  --active;
  return x;
}

int uneven(int x) {
  if (x != 0) {
    ++others_finished;
    return 1;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (others_finished.load() < others_needed.load()) {
    if (std::chrono::steady_clock::now() > deadline) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return 1;
}

namespace {
std::mutex seen_mu;
std::set<int> seen_inputs;
}  // namespace

int fail_first(int x) {
  std::lock_guard lock(seen_mu);
  if (seen_inputs.insert(x).second) throw std::runtime_error("first call for " + std::to_string(x));
  return x;
}

std::vector<std::size_t> concat_threads() {
  std::lock_guard lock(threads_mu);
  return threads;
}

void reset_concat_threads() {
  std::lock_guard lock(threads_mu);
  threads.clear();
}

}  // namespace graph_fns

TASKWIRE_REGISTER(graph_fns::square);
TASKWIRE_REGISTER(graph_fns::fail_first);
TASKWIRE_REGISTER(graph_fns::widen_square);
TASKWIRE_REGISTER(graph_fns::sum);
TASKWIRE_REGISTER(graph_fns::tag);
TASKWIRE_REGISTER(graph_fns::concat);
TASKWIRE_REGISTER(graph_fns::join_with);
TASKWIRE_REGISTER(graph_fns::fail_on_13);
TASKWIRE_REGISTER(graph_fns::tag_or_fail);
TASKWIRE_REGISTER(graph_fns::refuse);
TASKWIRE_REGISTER(graph_fns::gauge);
TASKWIRE_REGISTER(graph_fns::uneven);
