#include <taskwire/scheduler/instructions.hpp>

#include <fmt/ranges.h>

namespace taskwire::scheduler {

const std::string& stimulus_of(const Instruction& instruction) noexcept {
  return std::visit([](const auto& i) -> const std::string& { return i.stimulus_id; }, instruction);
}

}  // namespace taskwire::scheduler

namespace sch = taskwire::scheduler;

auto fmt::formatter<sch::LogLevel>::format(sch::LogLevel l, fmt::format_context& ctx) const
    -> fmt::format_context::iterator {
  std::string_view name = "?";
  switch (l) {
    case sch::LogLevel::debug:
      name = "debug";
      break;
    case sch::LogLevel::info:
      name = "info";
      break;
    case sch::LogLevel::warning:
      name = "warning";
      break;
    case sch::LogLevel::error:
      name = "error";
      break;
  }
  return fmt::formatter<std::string_view>::format(name, ctx);
}

namespace {
struct DescribeSchedulerInstruction {
  fmt::format_context::iterator out;
  auto operator()(const sch::ComputeTask& i) const {
    return fmt::format_to(out, "compute-task '{}' ({}, {} deps) -> {} [{}]", i.key, i.function,
                          i.dependencies.size(), i.worker, i.stimulus_id);
  }
  auto operator()(const sch::FreeKeys& i) const {
    return fmt::format_to(out, "free-keys {} -> {} [{}]", i.keys, i.worker, i.stimulus_id);
  }
  auto operator()(const sch::StealRequest& i) const {
    return fmt::format_to(out, "steal-request '{}' -> {} [{}]", i.key, i.worker, i.stimulus_id);
  }
  auto operator()(const sch::RefuseWorker& i) const {
    return fmt::format_to(out, "refuse-worker {} ({}) [{}]", i.worker, i.reason, i.stimulus_id);
  }
  auto operator()(const sch::CloseWorker& i) const {
    return fmt::format_to(out, "close-worker {} ({}) [{}]", i.worker, i.reason, i.stimulus_id);
  }
  auto operator()(const sch::AcquireReplicas& i) const {
    std::vector<std::string> keys;
    for (const auto& k : i.keys) keys.push_back(k.key);
    return fmt::format_to(out, "acquire-replicas {} -> {} [{}]", keys, i.worker, i.stimulus_id);
  }
  auto operator()(const sch::ReportKeyInMemory& i) const {
    return fmt::format_to(out, "key-in-memory '{}' ({} bytes) -> client {} [{}]", i.key, i.nbytes,
                          i.client, i.stimulus_id);
  }
  auto operator()(const sch::ReportTaskErred& i) const {
    return fmt::format_to(out, "task-erred '{}': {}{}{} -> client {} [{}]", i.key,
                          i.exception_type, i.exception_type.empty() ? "" : ": ", i.message,
                          i.client, i.stimulus_id);
  }
  auto operator()(const sch::ReportKeyLost& i) const {
    return fmt::format_to(out, "lost-data '{}' -> client {} [{}]", i.key, i.client, i.stimulus_id);
  }
  auto operator()(const sch::ReportCancelled& i) const {
    return fmt::format_to(out, "cancelled-keys {} ({}) -> client {} [{}]", i.keys, i.reason,
                          i.client, i.stimulus_id);
  }
  auto operator()(const sch::ReportRetirement& i) const {
    return fmt::format_to(out, "retirement {}: {} retired, {} not -> client {} [{}]",
                          i.request_id, i.retired, i.failed.size(), i.client, i.stimulus_id);
  }
  auto operator()(const sch::ReportRebalance& i) const {
    return fmt::format_to(out, "rebalanced {} key(s), {} B, {} failed -> client {} #{} [{}]",
                          i.moved, i.moved_bytes, i.failed.size(), i.client, i.request_id,
                          i.stimulus_id);
  }
  auto operator()(const sch::DropTaskSpec& i) const {
    return fmt::format_to(out, "drop-task-spec '{}' (spec {}) [{}]", i.key, i.spec, i.stimulus_id);
  }
  auto operator()(const sch::LogEvent& i) const {
    return fmt::format_to(out, "log {}: {} [{}]", i.level, i.message, i.stimulus_id);
  }
};
}  // namespace

auto fmt::formatter<sch::Instruction>::format(const sch::Instruction& i,
                                              fmt::format_context& ctx) const
    -> fmt::format_context::iterator {
  return std::visit(DescribeSchedulerInstruction{ctx.out()}, i);
}
