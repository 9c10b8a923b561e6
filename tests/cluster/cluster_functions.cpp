#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/runtime/function_registry.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

namespace cluster_fns {
int inc(int x) { return x + 1; }
int add(int a, int b) { return a + b; }
long sum(std::vector<int> xs) { return std::accumulate(xs.begin(), xs.end(), 0L); }
long dot(const std::vector<int>& xs, std::vector<int> ys) {
  if (xs.size() != ys.size()) throw std::invalid_argument("dot: vectors of different lengths");
  return std::inner_product(xs.begin(), xs.end(), ys.begin(), 0L);
}
int fail_on(int x) {
  if (x == 13) throw std::runtime_error("bad input 13");
  return x;
}
int throw_int(int x) { throw x; }
std::string greet(std::string who) { return "hello " + who; }
int slow_inc(int x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return x + 1;
}
int noop(int x) { return x; }
std::string blob(int kib, int seed) {
  return std::string(static_cast<std::size_t>(kib) * 1024, static_cast<char>('a' + seed % 26));
}
std::string concat(std::string a, std::string b) { return a + b; }

namespace {
std::mutex flaky_mu;
std::map<std::string, int> flaky_calls;
}  // namespace

int flaky(std::string tag, int failures) {
  int calls = 0;
  {
    std::lock_guard lock(flaky_mu);
    calls = ++flaky_calls[tag];
  }
  if (calls <= failures) throw std::runtime_error("flaky " + tag + " call " + std::to_string(calls));
  return calls;
}
int calls_of(const std::string& tag) {
  std::lock_guard lock(flaky_mu);
  auto it = flaky_calls.find(tag);
  return it == flaky_calls.end() ? 0 : it->second;
}

namespace {
std::mutex gates_mu;
std::condition_variable gates_cv;
std::map<std::string, bool> gates;  ///< gate -> opened; present once a hold entered it
std::vector<std::string> recorded;
}  // namespace

int hold(std::string gate) {
  std::unique_lock lock(gates_mu);
  gates.try_emplace(gate, false);
  gates_cv.notify_all();
  return gates_cv.wait_for(lock, std::chrono::minutes(2), [&] { return gates[gate]; }) ? 1 : 0;
}
int gated(std::string gate, int x) {
  hold(std::move(gate));
  return x;
}
void open_gate(const std::string& gate) {
  std::lock_guard lock(gates_mu);
  gates[gate] = true;
  gates_cv.notify_all();
}
bool entered(const std::string& gate) {
  std::unique_lock lock(gates_mu);
  return gates_cv.wait_for(lock, std::chrono::minutes(1), [&] { return gates.count(gate) > 0; });
}
int record(std::string tag, int x) {
  std::lock_guard lock(gates_mu);
  recorded.push_back(std::move(tag));
  return x;
}
std::vector<std::string> run_log() {
  std::lock_guard lock(gates_mu);
  return recorded;
}
namespace {
std::mutex overlap_mu;
std::map<std::string, std::pair<int, int>> overlap;  // tag -> running now, most at once
}  // namespace

int exclusive(std::string tag, int x) {
  {
    std::lock_guard lock(overlap_mu);
    auto& [now, most] = overlap[tag];
    most = std::max(most, ++now);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::lock_guard lock(overlap_mu);
  --overlap[tag].first;
  return x;
}

int max_overlap(const std::string& tag) {
  std::lock_guard lock(overlap_mu);
  return overlap[tag].second;
}

}  // namespace cluster_fns

TASKWIRE_REGISTER(cluster_fns::inc);
TASKWIRE_REGISTER(cluster_fns::add);
TASKWIRE_REGISTER(cluster_fns::sum);
TASKWIRE_REGISTER(cluster_fns::dot);
TASKWIRE_REGISTER(cluster_fns::fail_on);
TASKWIRE_REGISTER(cluster_fns::throw_int);
TASKWIRE_REGISTER(cluster_fns::greet);
TASKWIRE_REGISTER(cluster_fns::slow_inc);
TASKWIRE_REGISTER(cluster_fns::noop);
TASKWIRE_REGISTER(cluster_fns::blob);
TASKWIRE_REGISTER(cluster_fns::concat);
TASKWIRE_REGISTER(cluster_fns::flaky);
TASKWIRE_REGISTER(cluster_fns::gated);
TASKWIRE_REGISTER(cluster_fns::exclusive);
TASKWIRE_REGISTER(cluster_fns::record);
TASKWIRE_REGISTER(cluster_fns::hold);
