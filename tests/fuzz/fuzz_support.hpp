#pragma once
// What the fuzz targets and the seed-corpus generator share: which body type each operation
// is read as (the scheduler, worker and client readers each dispatch on the op code and read
// the body as the type listed here), and a check that stops the fuzzer on a broken invariant.
#include <taskwire/runtime/protocol.hpp>
#include <taskwire/runtime/wire_codec.hpp>

#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

// Always on (also under NDEBUG): a broken invariant is a finding, so it must crash.
#define TASKWIRE_FUZZ_CHECK(cond)                                                   \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", __FILE__, __LINE__, \
                   #cond);                                                          \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

namespace taskwire::fuzz {

// Every operation a taskwire reader accepts, with the body type its handler reads
// (scheduler/worker_op_handler.cpp, scheduler/client_op_handler.cpp, worker/scheduler_link.cpp,
// worker/peer_fetcher.cpp, worker/data_server.cpp, client/client_core.cpp). A new operation goes
// here too.
#define TASKWIRE_FUZZ_OPERATIONS(X)                                                    \
  X(update_graph, UpdateGraph) X(release_keys, Keys) X(cancel_keys, CancelKeys)           \
  X(shutdown, Empty) X(key_in_memory, KeyInMemory) X(key_erred, KeyErred)              \
  X(key_cancelled, KeysCancelled) X(shutting_down, Empty) X(key_lost, Keys)            \
  X(register_worker, RegisterWorker) X(heartbeat, Heartbeat) X(task_finished, TaskFinished) \
  X(task_erred, TaskErred) X(missing_data, MissingData) X(worker_closing, Empty)       \
  X(threads_busy, ThreadsBusy) X(worker_died, WorkerDied) X(compute_task, ComputeTask) \
  X(free_keys, Keys) X(close_worker, CloseWorker) X(worker_refused, WorkerRefused)           \
  X(free_processing, Keys) X(get_data, GetData) X(data_reply, DataReply)              \
  X(scheduler_info, SchedulerInfoRequest) X(scheduler_info_reply, SchedulerInfo)          \
  X(steal_request, StealRequest) X(steal_response, StealResponse)                         \
  X(worker_status, WorkerStatus) X(update_data, UpdateData)                               \
  X(update_data_reply, UpdateDataReply) X(add_keys, Keys) X(retire_worker, RetireWorker)    \
  X(acquire_replicas, AcquireReplicas) X(retire_workers, RetireWorkersRequest)             \
  X(retire_workers_reply, RetireWorkersReply) X(rebalance, RebalanceRequest)               \
  X(rebalance_reply, RebalanceReply)

/// Calls `visit(std::type_identity<Body>{})` with the body type of `op`; false (and no
/// call) for a code no reader accepts.
template <class Visit>
bool visit_body_type(protocol::Op op, Visit&& visit) {
  switch (op) {
#define TASKWIRE_FUZZ_CASE(op, Body)                  \
  case protocol::Op::op:                              \
    visit(std::type_identity<protocol::Body>{});      \
    return true;
    TASKWIRE_FUZZ_OPERATIONS(TASKWIRE_FUZZ_CASE)
#undef TASKWIRE_FUZZ_CASE
  }
  return false;
}

struct OperationName {
  protocol::Op op;
  const char* name;
};
/// The operations of TASKWIRE_FUZZ_OPERATIONS with their names (for seed file names).
inline constexpr OperationName kOperations[] = {
#define TASKWIRE_FUZZ_NAME(op, Body) {protocol::Op::op, #op},
    TASKWIRE_FUZZ_OPERATIONS(TASKWIRE_FUZZ_NAME)
#undef TASKWIRE_FUZZ_NAME
};

/// `value` in the operation-header codec.
template <class T>
std::vector<char> encode_body(const T& value) {
  std::vector<char> out;
  runtime::wire::Writer(out) << value;
  return out;
}

}  // namespace taskwire::fuzz
