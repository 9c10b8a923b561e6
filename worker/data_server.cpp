#include <taskwire/worker/data_server.hpp>

#include <fmt/format.h>
#include <algorithm>
#include <spdlog/spdlog.h>

namespace taskwire::worker {

using protocol::Op;

void DataServer::listen(const std::string& address) {
  comm::ListenOptions listen;
  listen.handshake = core_.handshake;
  // Weak: the listener is the worker's, a strong reference from its handler would be a cycle.
  listeners_.push_back(comm::listen(
      core_.registry, address,
      [this, weak = core_.owner](comm::CommPtr c) {
        if (auto held = weak.lock()) on_accept(std::move(c));
        else c->abort();
      },
      std::move(listen)));
}

void DataServer::stop_listening() {
  for (auto& listener : listeners_) listener->stop();
}

void DataServer::on_accept(comm::CommPtr comm) {
  if (!served_.add(comm)) return comm->abort();
  serve(std::move(comm));
}

// One request batch at a time per comm, answered from the data store on the comm's own
// strand (the store is thread-safe), so serving never waits for the worker's strand. The next
// request is read once the reply's write handler ran: a peer that asks faster than it reads
// the replies then waits in its own requests, and this worker's queue to it stays within
// the comm's bound (comm.hpp, "Bounded queues").
void DataServer::serve(comm::CommPtr comm) {
  // Weak: the comm keeps its pending handler, and the worker keeps the comm.
  std::weak_ptr<comm::Comm> weak_comm = comm;
  comm->async_read([this, weak = core_.owner, weak_comm](error_code ec, runtime::Message m) {
    auto held = weak.lock();
    auto comm = weak_comm.lock();
    if (!held || !comm) return;
    if (!ec && answer(comm, m)) return;
    served_.remove(comm);
  });
}

bool DataServer::answer(const comm::CommPtr& comm, const runtime::Message& request) {
  runtime::BatchWriter reply;
  std::vector<ClientData> updates;
  std::vector<Waiting> waits;
  try {
    runtime::for_each_op(request, [&](runtime::OpReader& r) {
      if (r.op() == Op::update_data) return take_client_data(r, updates);  // client_data.cpp
      if (r.op() != Op::get_data)
        throw runtime::SerializationError(
            fmt::format("unexpected operation {} (expected get_data)", static_cast<int>(r.op())));
      auto get = r.body<protocol::GetData>();
      if (get.wait && get.keys.size() == 1 && !core_.data->contains(get.keys.front()))
        return waits.push_back({comm, get.request_id, std::move(get.keys.front())});
      auto lookup = core_.data->get_many(get.keys);
      if (spdlog::should_log(spdlog::level::debug)) {
        std::uint64_t bytes = 0;
        for (const auto& [key, frame] : lookup.found) bytes += frame.size();
        spdlog::debug("worker {}: get_data from {}: sends {} value(s), {} bytes", core_.name,
                      comm->peer_address(), lookup.found.size(), bytes);
      }
      protocol::DataReply body;
      body.request_id = get.request_id;
      body.missing = std::move(lookup.missing);
      std::vector<runtime::Frame> frames;
      frames.reserve(lookup.found.size());
      for (auto& [key, frame] : lookup.found) {
        body.keys.push_back(std::move(key));
        frames.push_back(std::move(frame));
      }
      reply.add(Op::data_reply, body, std::move(frames));
    });
  } catch (const std::exception& e) {
    spdlog::warn("worker {}: malformed batch from {}: {}; closing that comm", core_.name,
                 comm->peer_address(), e.what());
    comm->abort();
    return false;
  }
  if (!waits.empty())
    asio::post(core_.strand, [this, held = core_.hold(), waits = std::move(waits)]() mutable {
      park(std::move(waits));
    });
  if (!updates.empty())
    store_client_data(comm, std::move(updates), std::move(reply));
  else
    reply_then_serve(comm, std::move(reply));  // a parked request holds nothing back
  return true;
}

// ---- waiting requests ----
// A peer that was assigned a task ahead of its input running here asks for the input at
// once and is answered when it is done: the result goes producer -> consumer in one message,
// with no word from the scheduler. A key this worker no longer computes (freed, erred,
// stolen) is answered missing, and the scheduler places the consumer again; one it does not
// know yet (its compute_task may still be on the way: the scheduler sends both at once, on
// different connections) is answered missing only after kUnknownWait.

namespace {
/// Requests parked at once; past it a waiting request is answered missing (its task is then
/// placed again the usual way).
constexpr std::size_t kMaxParked = 4096;
/// How long a request for a key this worker does not know waits for its compute_task.
constexpr std::chrono::milliseconds kUnknownWait{200};

}  // namespace

void DataServer::park(std::vector<Waiting> waits) {
  if (core_.closing) return;
  const auto now = std::chrono::steady_clock::now();
  for (auto& w : waits) {
    const bool unknown = !core_.state->task(w.key);
    if (parked_.size() >= kMaxParked || (!unknown && !core_.state->computes(w.key))) {
      answer_waiting(w);
      continue;
    }
    w.since = now;
    parked_.push_back(std::move(w));
    if (unknown) watch_unknown();
  }
}

void DataServer::answer_parked_now() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(parked_, [&](const Waiting& w) {
    if (w.comm.expired()) return true;
    if (core_.state->computes(w.key)) return false;
    if (!core_.state->task(w.key) && now - w.since < kUnknownWait) return false;
    answer_waiting(w);
    return true;
  });
}

void DataServer::watch_unknown() {
  if (watching_unknown_) return;
  watching_unknown_ = true;
  unknown_timer_.expires_after(kUnknownWait);
  unknown_timer_.async_wait([this, held = core_.hold()](error_code ec) {
    watching_unknown_ = false;
    if (ec || core_.closing) return;
    answer_parked_now();
    const bool unknown_left = std::any_of(parked_.begin(), parked_.end(), [this](const Waiting& w) {
      return !core_.state->task(w.key);
    });
    if (unknown_left) watch_unknown();
  });
}

// With the key's bytes if held, else as missing. Written from the strand: the comm keeps the
// order of its writes, and the peer matches replies by request id.
void DataServer::answer_waiting(const Waiting& w) {
  auto comm = w.comm.lock();
  if (!comm) return;
  protocol::DataReply body;
  body.request_id = w.request_id;
  std::vector<runtime::Frame> frames;
  if (auto frame = core_.data->get(w.key)) {
    body.keys.push_back(w.key);
    frames.push_back(std::move(*frame));
  } else {
    body.missing.push_back(w.key);
  }
  runtime::BatchWriter reply;
  reply.add(Op::data_reply, body, std::move(frames));
  comm->async_write(reply.take(), [](error_code) {});  // a failed write aborts the comm
}

// The next request on `comm` is read once the reply's write handler ran (see serve()).
void DataServer::reply_then_serve(const comm::CommPtr& comm, runtime::BatchWriter reply) {
  if (reply.empty()) return serve(comm);
  std::weak_ptr<comm::Comm> weak_comm = comm;
  comm->async_write(reply.take(), [this, weak = core_.owner, weak_comm](error_code ec) {
    auto held = weak.lock();
    auto comm = weak_comm.lock();
    if (!held || !comm) return;
    if (!ec) return serve(comm);
    served_.remove(comm);  // a failed write aborted the comm
  });
}

}  // namespace taskwire::worker
