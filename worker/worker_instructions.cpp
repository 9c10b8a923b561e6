#include <taskwire/worker/worker_instructions.hpp>

#include <fmt/ranges.h>

namespace taskwire::worker {

const std::string& stimulus_of(const Instruction& instruction) noexcept {
  return std::visit([](const auto& i) -> const std::string& { return i.stimulus_id; },
                    instruction);
}

}  // namespace taskwire::worker

namespace wk = taskwire::worker;

namespace {
struct DescribeWorkerInstruction {
  fmt::format_context::iterator out;
  auto operator()(const wk::Execute& i) const {
    return fmt::format_to(out, "execute '{}' ({}, {} args, priority {}) [{}]", i.key, i.function,
                          i.args.size(), i.priority, i.stimulus_id);
  }
  auto operator()(const wk::GatherDep& i) const {
    return fmt::format_to(out, "gather-dep {} from {} [{}]", i.keys, i.worker, i.stimulus_id);
  }
  auto operator()(const wk::SendTaskFinished& i) const {
    return fmt::format_to(out, "task-finished '{}' ({} bytes, {:.6f} s) [{}]", i.key, i.nbytes,
                          i.duration_s, i.stimulus_id);
  }
  auto operator()(const wk::SendTaskErred& i) const {
    return fmt::format_to(out, "task-erred '{}': {}{}{} [{}]", i.key, i.exception_type,
                          i.exception_type.empty() ? "" : ": ", i.message, i.stimulus_id);
  }
  auto operator()(const wk::SendMissingData& i) const {
    return fmt::format_to(out, "missing-data '{}' needs '{}' (asked {}) [{}]", i.key, i.missing,
                          i.from.empty() ? "nobody" : i.from, i.stimulus_id);
  }
  auto operator()(const wk::SendAddKeys& i) const {
    return fmt::format_to(out, "add-keys {} [{}]", i.keys, i.stimulus_id);
  }
  auto operator()(const wk::SendStealResponse& i) const {
    return fmt::format_to(out, "steal-response '{}' {} [{}]", i.key,
                          i.stolen ? "stolen" : "refused", i.stimulus_id);
  }
};
}  // namespace

auto fmt::formatter<wk::Instruction>::format(const wk::Instruction& i,
                                             fmt::format_context& ctx) const
    -> fmt::format_context::iterator {
  return std::visit(DescribeWorkerInstruction{ctx.out()}, i);
}
