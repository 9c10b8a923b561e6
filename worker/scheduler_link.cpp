#include <taskwire/worker/scheduler_link.hpp>

#include <taskwire/runtime/process_info.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>

namespace taskwire::worker {

using protocol::Op;

SchedulerLink::SchedulerLink(WorkerCore& core, WorkerActions& actions)
    : core_(core), actions_(actions), heartbeat_(core.strand), goodbye_timer_(core.strand) {}

// ---- connecting ----

void SchedulerLink::connect(comm::ConnectOptions options) {
  auto done = std::make_shared<std::promise<comm::CommPtr>>();
  auto connected = done->get_future();
  {
    std::lock_guard lock(connect_mu_);
    connecting_ = true;
    pending_connect_ = comm::async_connect(
        core_.registry, core_.options.scheduler_address, std::move(options),
        [done](error_code ec, std::string detail, comm::CommPtr comm) {
          if (ec) done->set_exception(std::make_exception_ptr(comm::CommError(ec, detail)));
          else done->set_value(std::move(comm));
        });
    if (stop_while_connecting_) pending_connect_.cancel();
  }
  struct Connected {
    SchedulerLink& link;
    ~Connected() {
      std::lock_guard lock(link.connect_mu_);
      link.connecting_ = false;
      link.pending_connect_ = {};
    }
  } connected_guard{*this};
  comm_ = connected.get();
}

bool SchedulerLink::cancel_connect() {
  std::lock_guard lock(connect_mu_);
  if (!connecting_) return false;
  stop_while_connecting_ = true;
  pending_connect_.cancel();
  return true;
}

void SchedulerLink::abandon() {
  comm_->abort();
  comm_.reset();
}

// ---- registering, reading, heartbeats ----

void SchedulerLink::register_worker(protocol::RegisterWorker registration) {
  send(Op::register_worker, registration);
  send_heartbeat();
}

void SchedulerLink::start_reading() {
  read();
  schedule_heartbeat();
}

// Read handlers hold the worker weakly: the comm keeps its pending handler, and the worker
// keeps the comm, so a strong reference would be a cycle whenever the context stops first.
void SchedulerLink::read() {
  comm_->async_read([this, weak = core_.owner](error_code ec, runtime::Message m) {
    auto held = weak.lock();
    if (!held) return;
    // dispatch: inline when the strand is free (a post costs the event loop another pass).
    asio::dispatch(core_.strand, [this, held, ec, m = std::move(m)]() mutable {
      on_message(ec, std::move(m));
    });
  });
}

void SchedulerLink::on_message(error_code ec, runtime::Message message) {
  if (core_.closing) return;
  const auto& scheduler = core_.options.scheduler_address;
  if (ec) {
    const auto reason =
        ec == comm::errc::closed
            ? fmt::format("the scheduler at {} closed the connection", scheduler)
            : fmt::format("lost the connection to the scheduler at {}: {}", scheduler,
                          ec.message());
    lost_ = true;
    return actions_.begin_close(reason, false);
  }
  std::vector<Event> events;
  Requests requests;
  try {
    decode(message, events, requests);
  } catch (const std::exception& e) {
    comm_->abort();
    return actions_.begin_close(fmt::format("malformed batch from the scheduler at {}: {}",
                                            comm_->peer_address(), e.what()),
                                false);
  }
  if (requests.refused) {
    return actions_.begin_close(
        fmt::format("the scheduler at {} refused this worker: {}", scheduler, *requests.refused),
        false);
  }
  if (!events.empty()) actions_.handle(std::move(events));
  if (requests.close && requests.close->rejoin) {
    lost_ = true;
    return actions_.begin_close(
        fmt::format("the scheduler dropped this worker ({}); it may join again",
                    requests.close->reason),
        false);
  }
  if (requests.close)
    return actions_.begin_close(
        fmt::format("the scheduler asked this worker to close ({})", requests.close->reason),
        true);
  read();
}

void SchedulerLink::decode(runtime::Message& message, std::vector<Event>& events,
                           Requests& requests) {
  runtime::for_each_op(message, [&](runtime::OpReader& r) {
    switch (r.op()) {
      case Op::compute_task:
        events.emplace_back(compute_task_event(r));
        break;
      case Op::free_processing:
        busy_threads_asked_ = true;
        [[fallthrough]];
      case Op::free_keys: {
        auto keys = r.body<protocol::Keys>().keys;
        if (spdlog::should_log(spdlog::level::trace))
          spdlog::trace("worker {}: told to free {}", core_.name, fmt::join(keys, ", "));
        events.emplace_back(FreeKeysEvent{std::move(keys), ""});
        break;
      }
      case Op::steal_request: {
        auto b = r.body<protocol::StealRequest>();
        events.emplace_back(StealRequestEvent{std::move(b.key), "", b.attempt});
        break;
      }
      case Op::acquire_replicas:
        events.emplace_back(AcquireReplicasEvent{r.body<protocol::AcquireReplicas>().who_has, ""});
        break;
      case Op::close_worker:
        requests.close = r.body<protocol::CloseWorker>();
        break;
      case Op::worker_refused:
        requests.refused = r.body<protocol::WorkerRefused>().reason;
        break;
      default:
        throw runtime::SerializationError(
            fmt::format("unexpected operation {} for a worker", static_cast<int>(r.op())));
    }
  });
}

ComputeTaskEvent SchedulerLink::compute_task_event(runtime::OpReader& r) {
  auto body = r.body<protocol::ComputeTask>();
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("worker {}: received task '{}' ({}, {} dependencies, attempt {})", core_.name,
                  body.spec.key, body.spec.function, body.spec.dependencies.size(), body.attempt);
  ComputeTaskEvent e;
  e.spec = std::move(body.spec);
  e.who_has = std::move(body.who_has);
  e.frames.assign(r.frames().begin(), r.frames().end());
  e.attempt = body.attempt;
  e.awaited = std::move(body.awaited);
  for (auto& g : body.given) {
    if (g.frame >= r.frames().size())
      throw runtime::SerializationError("compute_task: a given dependency's frame is missing");
    e.given.emplace_back(std::move(g.key), r.frames()[g.frame]);
    e.frames[g.frame] = runtime::Frame();  // held once, by the store, not by the task too
  }
  return e;
}

void SchedulerLink::schedule_heartbeat() {
  heartbeat_.expires_after(core_.options.heartbeat_interval);
  heartbeat_.async_wait([this, held = core_.hold()](error_code ec) {
    if (ec || core_.closing) return;
    send_heartbeat();
    schedule_heartbeat();
  });
}

void SchedulerLink::send_heartbeat() {
  send(Op::heartbeat,
       protocol::Heartbeat{runtime::resident_set_bytes(),
                           static_cast<std::uint32_t>(core_.state->executing_count())});
}

// ---- sending ----

void SchedulerLink::end_batch() {
  handling_ = false;
  try {
    flush();  // everything the handler caused, as one message
  } catch (const std::exception& e) {
    spdlog::error("worker {}: sending to the scheduler failed: {}", core_.name, e.what());
  }
}

void SchedulerLink::flush() {
  flush_posted_ = false;
  if (core_.closing || outbox_.empty()) return;
  // A failed write aborts the comm; the pending read then reports it and closes the worker.
  comm_->async_write(outbox_.take(), [](error_code) {});
}

void SchedulerLink::report(SendTaskFinished& i) {
  std::vector<runtime::Frame> inline_result;
  if (i.nbytes <= core_.options.inline_result_bytes)
    if (auto frame = core_.data->get(i.key)) inline_result.push_back(std::move(*frame));
  protocol::TaskFinished m{i.key, i.nbytes, i.duration_s};
  m.thread = i.run.thread;
  m.attempt = i.attempt;
  if (i.run.transfer_bytes > 0 || i.run.transfer_stop > 0) {
    m.transfer_s = i.run.transfer_stop - i.run.transfer_start;
    m.transfer_end_ago_s = std::max(0.0, steady_seconds() - i.run.transfer_stop);
    m.transfer_bytes = i.run.transfer_bytes;
  }
  send(Op::task_finished, m, std::move(inline_result));
}

void SchedulerLink::report(SendTaskErred& i) {
  send(Op::task_erred, protocol::TaskErred{i.key, i.message, i.exception_type, i.attempt});
}

void SchedulerLink::report(SendMissingData& i) {
  send(Op::missing_data, protocol::MissingData{i.key, i.missing, i.from, i.awaited});
}

void SchedulerLink::report(SendAddKeys& i) {
  send(Op::add_keys, protocol::Keys{std::move(i.keys)});
}

void SchedulerLink::report(SendStealResponse& i) {
  send(Op::steal_response, protocol::StealResponse{i.key, i.stolen, i.attempt});
}

void SchedulerLink::report_busy_threads(std::size_t busy) {
  if ((busy == reported_busy_threads_ && !busy_threads_asked_) || core_.closing) return;
  reported_busy_threads_ = busy;
  busy_threads_asked_ = false;
  send(Op::threads_busy, protocol::ThreadsBusy{static_cast<std::uint32_t>(busy)});
}

// ---- closing ----

bool SchedulerLink::say_goodbye(std::function<void()> then) {
  if (!comm_ || comm_->closed()) return false;
  outbox_.add(Op::worker_closing, protocol::Empty{});
  auto held = core_.hold();
  comm_->async_write(outbox_.take(), [this, held, then](error_code) {
    asio::post(core_.strand, then);
  });
  goodbye_timer_.expires_after(kGoodbyeTimeout);
  goodbye_timer_.async_wait([this, held, then](error_code ec) {
    if (ec) return;
    spdlog::warn("worker {}: the goodbye to the scheduler was not sent within {} ms", core_.name,
                 kGoodbyeTimeout.count());
    comm_->abort();
    then();
  });
  return true;
}

void SchedulerLink::abort() {
  if (comm_) comm_->abort();
}

void SchedulerLink::close() {
  goodbye_timer_.cancel();
  if (comm_) comm_->close();
}

}  // namespace taskwire::worker
