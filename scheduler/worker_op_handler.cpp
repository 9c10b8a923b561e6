#include <taskwire/scheduler/worker_op_handler.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace taskwire::scheduler {

using protocol::Op;

WorkerOpHandler::WorkerOpHandler(ServerCore& core, DashboardService& dashboard)
    : core_(core), dashboard_(dashboard) {}

bool WorkerOpHandler::handle(const PeerPtr& p, runtime::OpReader& r) {
  switch (r.op()) {
    case Op::register_worker:
      on_register_worker(p, r.body<protocol::RegisterWorker>());
      return true;
    case Op::heartbeat: {
      auto b = r.body<protocol::Heartbeat>();
      auto worker = require_worker(p, "heartbeat");
      p->metrics = b;
      core_.handle(Heartbeat{std::move(worker), core_.now(), ""});
      return true;
    }
    case Op::task_finished:
      on_task_finished(p, r);
      return true;
    case Op::task_erred:
      on_task_erred(p, r.body<protocol::TaskErred>());
      return true;
    case Op::missing_data:
      on_missing_data(p, r.body<protocol::MissingData>());
      return true;
    case Op::threads_busy: {
      auto b = r.body<protocol::ThreadsBusy>();
      core_.handle(ThreadsBusy{require_worker(p, "threads_busy"), static_cast<int>(b.count), ""});
      return true;
    }
    case Op::steal_response: {
      auto b = r.body<protocol::StealResponse>();
      core_.handle(StealResponse{require_worker(p, "steal_response"), std::move(b.key), b.stolen,
                                 "", b.attempt});
      return true;
    }
    case Op::worker_status: {
      auto b = r.body<protocol::WorkerStatus>();
      core_.handle(WorkerStatusChanged{require_worker(p, "worker_status"), b.paused, ""});
      return true;
    }
    case Op::worker_died: {  // from a nanny, on a connection of its own
      if (p->kind != Peer::unknown) throw std::runtime_error("worker_died from a worker or client");
      auto b = r.body<protocol::WorkerDied>();
      core_.handle(WorkerDied{b.address, b.name, b.cause, std::move(b.running), core_.now(), ""});
      return true;
    }
    case Op::retire_worker: {
      auto b = r.body<protocol::RetireWorker>();
      core_.handle(RetireWorker{require_worker(p, "retire_worker"), std::move(b.reason), ""});
      return true;
    }
    case Op::add_keys: {
      auto b = r.body<protocol::Keys>();
      core_.handle(AddKeys{require_worker(p, "add_keys"), std::move(b.keys), ""});
      return true;
    }
    case Op::worker_closing:
      r.body<protocol::Empty>();
      require_worker(p, "worker_closing");
      p->closing = true;
      return true;
    default:
      return false;
  }
}

void WorkerOpHandler::on_register_worker(const PeerPtr& p, const protocol::RegisterWorker& b) {
  if (p->kind != Peer::unknown) throw std::runtime_error("register_worker sent twice");
  if (core_.peers.worker(b.address))
    throw std::runtime_error("a worker at " + b.address + " is already registered");
  if (core_.stopping) {
    // Its connection was open when the shutdown began: it gets what the others got, or it
    // would wait to join again a scheduler that is gone (until its --death-timeout).
    core_.peers.out_to(p)->add(Op::close_worker,
                               protocol::CloseWorker{"the scheduler is shutting down", false});
    return core_.peers.flush();
  }
  p->kind = Peer::worker;
  p->id = b.address;
  p->other_addresses = b.other_addresses;
  p->host = b.host;
  core_.peers.add_worker(p);  // until the state machine refuses it (RefuseWorker)
  core_.handle(AddWorker{b.address, static_cast<int>(b.nthreads), b.name, core_.now(), "",
                         b.nanny, b.resources, b.held});
}

void WorkerOpHandler::on_task_finished(const PeerPtr& p, runtime::OpReader& r) {
  auto b = r.body<protocol::TaskFinished>();
  auto worker = require_worker(p, "task_finished");
  const runtime::Frame* inline_bytes = r.frames().size() == 1 ? &r.frames()[0] : nullptr;
  if (inline_bytes) core_.sender.set_inline_result(b.key, *inline_bytes);
  if (auto* recorder = dashboard_.recorder()) {
    const double t = core_.now();
    if (recorder->records(b, t))
      recorder->task_finished(worker, core_.state.nthreads_of(worker),
                              core_.state.function_of(b.key), b, t);
  }
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("scheduler: task '{}' finished on {} in {:.3f} ms, {} bytes", b.key, worker,
                  b.duration_s * 1e3, b.nbytes);
  // Kept before the report is handled (the consumers it lets the scheduler place go out in
  // this event), only for the current attempt (a late report of an older one must not
  // replace its bytes), and only small ones, whatever the worker sends inline.
  if (inline_bytes && core_.state.attempt(b.key) == b.attempt)
    core_.specs.keep_result(b.key, b.attempt, *inline_bytes);
  core_.handle(TaskFinished{std::move(worker), std::move(b.key),
                            static_cast<std::int64_t>(b.nbytes), b.duration_s, "", b.attempt});
  core_.sender.clear_inline_result();
}

void WorkerOpHandler::on_task_erred(const PeerPtr& p, protocol::TaskErred b) {
  auto worker = require_worker(p, "task_erred");
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("scheduler: task '{}' erred on {}: {}{}{}", b.key, worker, b.exception_type,
                  b.exception_type.empty() ? "" : ": ", b.message);
  if (auto* recorder = dashboard_.recorder())
    recorder->task_erred(worker, core_.state.nthreads_of(worker), b.key,
                         core_.state.function_of(b.key), b.message, core_.now());
  core_.handle(TaskErred{std::move(worker), std::move(b.key), std::move(b.message),
                         std::move(b.exception_type), "", b.attempt});
}

void WorkerOpHandler::on_missing_data(const PeerPtr& p, protocol::MissingData b) {
  // From a client too (since protocol version 10): no holder it was told of could send the
  // key, so that the key is computed again instead of the client waiting.
  std::string reporter = p->kind == Peer::worker ? p->id : "";
  if (reporter.empty()) {
    core_.peers.become_client(p);
    reporter = p->id;
    b.key.clear();  // a client names no dependent of its own
  }
  core_.handle(MissingData{std::move(reporter), b.missing, b.from, b.key, "", b.awaited});
}

std::string WorkerOpHandler::require_worker(const PeerPtr& p, const char* op) {
  if (p->kind != Peer::worker)
    throw std::runtime_error(
        fmt::format("'{}' from a peer that is not a registered worker", op));
  return p->id;
}

}  // namespace taskwire::scheduler
