// Scatter straight to workers, after Dask's Client.scatter(direct=True): the client asks the
// scheduler which workers there are, sends each value to the one holding the fewest bytes
// (to every one with broadcast), and then tells the scheduler who holds what. The scheduler
// records the holders and sizes and never sees the bytes.
#include <taskwire/client/client_core.hpp>

#include <taskwire/comm/core/address.hpp>
#include <taskwire/runtime/function_registry.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

namespace taskwire::client {

using protocol::Op;

namespace {

int scattered_tag;  // its address stands for the built-in below

// The task of a scattered key: it runs only if every worker holding the data left (the
// scheduler then computes lost keys again), and says so.
[[maybe_unused]] const bool registered_scattered = [] {
  runtime::FunctionRegistry::global().add(
      ClientCore::kScatteredFunction, &scattered_tag, 0,
      runtime::Invoker([](const std::vector<runtime::Value>&) -> runtime::Value {
        throw std::runtime_error("scattered data lost: every worker that held it left; "
                                 "scatter it again");
      }));
  return true;
}();

// The address of `w` on the scheme the client reached the scheduler by (a worker talking
// mpi:// to its peers may have a tcp:// door for clients).
std::string contact_address(const protocol::WorkerReport& w, const std::string& scheduler) {
  const auto scheme = comm::Address::parse(scheduler).scheme;
  if (comm::Address::parse(w.address).scheme == scheme) return w.address;
  for (const auto& a : w.other_addresses)
    if (comm::Address::parse(a).scheme == scheme) return a;
  return w.address;
}

bool named(const protocol::WorkerReport& w, const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
    return n == w.address || n == w.name ||
           std::find(w.other_addresses.begin(), w.other_addresses.end(), n) != w.other_addresses.end();
  });
}

}  // namespace

std::vector<std::vector<std::size_t>> ClientCore::place_evenly(
    const std::vector<std::uint64_t>& held, const std::vector<runtime::Frame>& frames,
    bool broadcast) {
  std::vector<std::vector<std::size_t>> placed(held.size());
  if (held.empty()) return placed;
  std::vector<std::uint64_t> load = held;
  std::size_t next = 0;  // ties go round robin
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (broadcast) {
      for (auto& p : placed) p.push_back(i);
      continue;
    }
    std::size_t best = next;
    for (std::size_t k = 1; k < load.size(); ++k) {
      const std::size_t w = (next + k) % load.size();
      if (load[w] < load[best]) best = w;
    }
    placed[best].push_back(i);
    load[best] += frames[i].size();
    next = (best + 1) % load.size();
  }
  return placed;
}

std::vector<std::shared_ptr<KeyRef>> ClientCore::scatter(std::vector<runtime::Frame> frames,
                                                         const std::vector<std::string>& workers,
                                                         bool broadcast) {
  const auto info = scheduler_info(fetch_timeout_);
  std::vector<const protocol::WorkerReport*> targets;
  for (const auto& w : info.workers)
    if (workers.empty() || named(w, workers)) targets.push_back(&w);
  if (targets.empty() && !workers.empty())
    throw std::invalid_argument(fmt::format("scatter: none of the workers {} is connected",
                                            fmt::join(workers, ", ")));
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < frames.size(); ++i) keys.push_back(new_key("scatter"));
  std::vector<std::uint64_t> held;
  for (const auto* w : targets) held.push_back(w->bytes_held);
  const auto placed = place_evenly(held, frames, broadcast);

  protocol::UpdateGraph graph;
  std::vector<protocol::ScatteredKey> where(frames.size());
  for (std::size_t t = 0; t < targets.size(); ++t) {
    if (placed[t].empty()) continue;
    try {
      for (auto i : send_to_worker(contact_address(*targets[t], info.address), keys, frames,
                                   placed[t], where))
        where[i].workers.push_back(targets[t]->address);
    } catch (const std::exception& e) {
      spdlog::warn("client: scatter to {} failed ({}); that data goes through the scheduler",
                   targets[t]->address, e.what());
    }
  }
  // What no worker took (none connected, or its worker failed) goes the old way: a task
  // returning the bytes, sent with it through the scheduler, placed where a worker is free.
  std::vector<runtime::Frame> through_scheduler;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    protocol::TaskSpec spec;
    spec.key = keys[i];
    spec.priority = next_priority();
    if (where[i].workers.empty()) {
      spec.function = kIdentityFunction;
      spec.args.push_back({protocol::ArgSpec::frame,
                           static_cast<std::uint32_t>(through_scheduler.size()), {}});
      through_scheduler.push_back(std::move(frames[i]));
    } else {
      spec.function = kScatteredFunction;
      where[i].key = keys[i];
      graph.scattered.push_back(std::move(where[i]));
    }
    graph.tasks.push_back(std::move(spec));
    graph.wanted.push_back(keys[i]);
  }
  std::vector<std::shared_ptr<KeyRef>> refs;
  for (const auto& k : keys) refs.push_back(hold(k));
  send([&](Outbox& out) {
    out.add(Op::update_graph, graph, std::move(through_scheduler), std::move(keys));
  });
  return refs;
}

// One update_data exchange with the worker at `address`: frames[placed...] under their keys;
// returns those it holds and sets their sizes in `where`. Throws on any failure.
std::vector<std::size_t> ClientCore::send_to_worker(const std::string& address,
                                                    const std::vector<std::string>& keys,
                                                    const std::vector<runtime::Frame>& frames,
                                                    const std::vector<std::size_t>& placed,
                                                    std::vector<protocol::ScatteredKey>& where) {
  static std::atomic<std::uint64_t> ids{0};
  const std::uint64_t id = ++ids;
  std::uint64_t bytes = 0;
  for (auto i : placed) bytes += frames[i].size();
  std::vector<std::size_t> held;
  exchange_with_worker(address, time_allowed(bytes), [&](const comm::CommPtr& comm,
                                                         const TimeLeft& left) {
    protocol::UpdateData body{id, {}};
    std::vector<runtime::Frame> payload;
    for (auto i : placed) {
      body.keys.push_back(keys[i]);
      payload.push_back(frames[i]);
    }
    runtime::BatchWriter w;
    w.add(Op::update_data, body, std::move(payload));
    comm::write_sync(comm, w.take(), left());
    auto reply = comm::read_sync(comm, left());
    held.clear();  // a second try on a fresh connection starts over
    runtime::for_each_op(reply, [&](runtime::OpReader& r) {
      if (r.op() != Op::update_data_reply)
        throw runtime::SerializationError("expected update_data_reply from " + address);
      auto b = r.body<protocol::UpdateDataReply>();
      if (b.request_id != id || b.nbytes.size() != b.keys.size())
        throw runtime::SerializationError("a malformed update_data_reply from " + address);
      for (std::size_t k = 0; k < b.keys.size(); ++k)
        for (auto i : placed)
          if (keys[i] == b.keys[k]) {
            held.push_back(i);
            where[i].nbytes = std::max(where[i].nbytes, b.nbytes[k]);
          }
    });
  });
  return held;
}

}  // namespace taskwire::client
