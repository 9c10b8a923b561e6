#include "sim_messages.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace taskwire::sim {

namespace {

std::string describe_result(const worker::Event& e) {
  if (const auto* s = std::get_if<worker::ExecuteSuccess>(&e))
    return fmt::format("executed '{}'", s->key);
  if (const auto* f = std::get_if<worker::ExecuteFailure>(&e))
    return fmt::format("execution of '{}' failed", f->key);
  return "executed ?";
}
}  // namespace

std::string describe(const Payload& p) {
  return std::visit(
      Overloaded{
          [](const OpComputeTask& x) {
            std::vector<std::string> deps;
            for (const auto& [k, holders] : x.event.who_has)
              deps.push_back(fmt::format("{}@{}", k, holders));
            return fmt::format("compute-task '{}' #{} {}", x.event.spec.key, x.event.attempt, deps);
          },
          [](const OpFreeKeys& x) {
            return fmt::format("{} {}", x.processing ? "free-processing" : "free-keys", x.keys);
          },
          [](const OpStealRequest& x) { return fmt::format("steal-request '{}'", x.key); },
          [](const OpCloseWorker& x) {
            return std::string(x.rejoin ? "close-worker" : "close-worker (retired)");
          },
          [](const OpAcquireReplicas& x) {
            std::vector<std::string> keys;
            for (const auto& [k, holders] : x.who_has) keys.push_back(fmt::format("{}@{}", k, holders));
            return fmt::format("acquire-replicas {}", keys);
          },
          [](const OpRetireWorker&) { return std::string("retire-worker"); },
          [](const OpRetireWorkers& x) { return fmt::format("retire-workers {}", x.workers); },
          [](const OpAddKeys& x) { return fmt::format("add-keys {}", x.keys); },
          [](const OpWorkerRefused&) { return std::string("worker-refused"); },
          [](const OpRegister& x) {
            return fmt::format("register '{}' ({} threads{}{})", x.name, x.nthreads,
                               x.nanny ? ", nanny" : "",
                               x.held.empty() ? "" : fmt::format(", holding {}", x.held));
          },
          [](const OpHeartbeat&) { return std::string("heartbeat"); },
          [](const OpTaskFinished& x) {
            return fmt::format("task-finished '{}' #{}", x.key, x.attempt);
          },
          [](const OpTaskErred& x) {
            return fmt::format("task-erred '{}' #{}: {}", x.key, x.attempt, x.message);
          },
          [](const OpMissingData& x) {
            return fmt::format("missing-data '{}' needs '{}' (asked {})", x.key, x.missing, x.from);
          },
          [](const OpThreadsBusy& x) { return fmt::format("threads-busy {}", x.count); },
          [](const OpStealResponse& x) {
            return fmt::format("steal-response '{}' {}", x.key, x.stolen ? "stolen" : "refused");
          },
          [](const OpWorkerStatus& x) {
            return std::string(x.paused ? "worker-status paused" : "worker-status running");
          },
          [](const OpConnectionClosed& x) {
            return fmt::format("connection closed ({}{})", x.expected ? "goodbye, " : "", x.reason);
          },
          [](const OpWorkerDied& x) {
            return fmt::format("worker-died {} running {}", x.address, x.running);
          },
          [](const OpGetData& x) {
            return fmt::format("get-data #{} {}{}", x.id, x.keys, x.wait ? " (wait)" : "");
          },
          [](const OpDataReply& x) {
            std::vector<std::string> keys;
            for (const auto& [k, f] : x.data) keys.push_back(k);
            return fmt::format("data-reply #{} {} missing {}", x.id, keys, x.missing);
          },
          [](const OpPeerLost&) { return std::string("comm failed (peer gone)"); },
          [](const OpUpdateGraph& x) {
            return fmt::format("update-graph {} tasks, wants {}", x.tasks.size(), x.wanted);
          },
          [](const OpReleaseKeys& x) { return fmt::format("release-keys {}", x.keys); },
          [](const OpKeyInMemory& x) { return fmt::format("key-in-memory '{}'", x.key); },
          [](const OpKeyErred& x) {
            return fmt::format("key-erred '{}' (blames '{}': {})", x.key, x.blamed_key, x.cause);
          },
          [](const OpKeyLost& x) { return fmt::format("key-lost '{}'", x.key); },
          [](const OpKeyCancelled& x) { return fmt::format("cancelled {}: {}", x.keys, x.reason); },
          [](const LocalExecuted& x) { return describe_result(x.result); },
          [](const LocalHeartbeatTimer&) { return std::string("timer"); },
          [](const LocalFaultTimer&) { return std::string("fault timer"); },
          [](const LocalUnpause&) { return std::string("unpause (memory fell)"); },
          [](const LocalRetireGrace&) { return std::string("retirement's grace over"); },
          [](const LocalJoin& x) { return fmt::format("start a worker '{}'", x.name); },
          [](const LocalSubmit&) { return std::string("submit a graph"); },
          [](const LocalFetchRetry& x) {
            return fmt::format("fetch '{}' again (round {})", x.key, x.attempt + 1);
          },
      },
      p);
}

}  // namespace taskwire::sim
