#pragma once
// Turns the scheduler state machine's instructions into operations batched for its peers
// (PeerLinks; sent at the next flush), compute_task from the stored specs. On the
// scheduler's strand only. Not installed API.
#include <taskwire/runtime/frame.hpp>
#include <taskwire/scheduler/instructions.hpp>
#include <taskwire/scheduler/peer_links.hpp>
#include <taskwire/scheduler/scheduler_state.hpp>
#include <taskwire/scheduler/task_spec_store.hpp>

#include <optional>
#include <utility>

namespace taskwire::scheduler {

class InstructionSender {
 public:
  InstructionSender(PeerLinks& peers, TaskSpecStore& specs, const SchedulerState& state);
  InstructionSender(const InstructionSender&) = delete;
  InstructionSender& operator=(const InstructionSender&) = delete;

  void send(Instructions instructions);
  /// The result a worker sent inline with the task_finished being handled: forwarded with
  /// the key_in_memory reports that event causes, until cleared (the scheduler keeps no data).
  void set_inline_result(const protocol::Key& key, const runtime::Frame& bytes) {
    inline_result_.emplace(key, bytes);
  }
  void clear_inline_result() { inline_result_.reset(); }

 private:
  void emit(ComputeTask& ct);
  void emit(FreeKeys& f);
  void emit(StealRequest& s);
  void emit(RefuseWorker& r);
  void emit(CloseWorker& c);
  void emit(AcquireReplicas& a);
  void emit(ReportKeyInMemory& r);
  void emit(ReportTaskErred& r);
  void emit(ReportKeyLost& r);
  void emit(ReportCancelled& r);
  void emit(ReportRetirement& r);
  void emit(ReportRebalance& r);
  void emit(DropTaskSpec& d);
  void emit(LogEvent& l);

  PeerLinks& peers_;
  TaskSpecStore& specs_;
  const SchedulerState& state_;
  std::optional<std::pair<protocol::Key, runtime::Frame>> inline_result_;
};

}  // namespace taskwire::scheduler
