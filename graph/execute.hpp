#pragma once
// graph::execute: runs a map/reduce graph (graph/graph.hpp) on any connected Client (a
// scheduler over tcp://, inproc://, mpi://, or the client an MPI launch hands out).
//
//   std::vector<R> rs = graph::execute(graph::map(fn, inputs), client);  // in input order
//   R r = graph::execute(graph::reduce(graph::map(fn, inputs), combine), client,
//                        {.chunksize = 64, .progress = {.bar = true}});
//
// Blocks the calling thread until the result is in hand. Nothing is bound to a worker in
// advance: the scheduler gives tasks to workers as they free up. A map task that throws fails
// the whole call with MapError (the input's index and the message); a failed combine, a
// cancelled task or a lost cluster with TaskError; bad options or graphs with
// std::invalid_argument (see graph.hpp). Thread-safety: as the Client's.
#include <taskwire/client/client.hpp>
#include <taskwire/graph/graph.hpp>
#include <taskwire/graph/options.hpp>
#include <taskwire/graph/plan.hpp>
#include <taskwire/graph/run.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <utility>
#include <vector>

namespace taskwire::graph {
namespace detail {

// One map task per input (chunksize 1, fn itself), or per chunk (the chunk runner over fn).
template <class R, class P>
Job map_job(const MapGraph<R, P>& g, std::size_t chunksize) {
  Job job;
  const auto name = runtime::FunctionRegistry::global().name_of(reinterpret_cast<const void*>(g.fn));
  if (!g.futures.empty()) {
    if (chunksize != 1)
      throw std::invalid_argument("execute: a map over futures runs one task per future, where "
                                  "its data is: chunksize must be 1");
    job.function = name;
    for (std::size_t i = 0; i < g.futures.size(); ++i) {
      job.futures.push_back(g.futures[i].template as<runtime::Frame>());
      job.tasks.push_back({{}, i, {static_cast<std::uint32_t>(i)}});
    }
    return job;
  }
  const std::size_t n = g.inputs.size();
  if (chunksize == 1 || n == 0) {
    job.function = name;
    job.frames.reserve(n);
    job.tasks.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      job.frames.push_back(runtime::to_frame(g.inputs[i]));
      job.tasks.push_back({{static_cast<std::uint32_t>(i)}, i});
    }
    return job;
  }
  job.function = kMapChunk;
  job.chunked = true;
  job.frames.push_back(runtime::to_frame(name));
  for (std::size_t first = 0; first < n; first += chunksize) {
    const auto last = std::min(n, first + chunksize);
    const auto at = static_cast<std::uint32_t>(job.frames.size());
    job.frames.push_back(runtime::to_frame(static_cast<std::uint64_t>(first)));
    job.frames.push_back(runtime::to_frame(std::vector<typename MapGraph<R, P>::input_type>(
        g.inputs.begin() + static_cast<std::ptrdiff_t>(first),
        g.inputs.begin() + static_cast<std::ptrdiff_t>(last))));
    job.tasks.push_back({{0, at, at + 1}, first});
  }
  return job;
}

// Each map task's results as one batch (one result, or a chunk's).
template <class R>
std::vector<std::vector<R>> decode_batches(const Job& job, const std::vector<runtime::Frame>& frames) {
  std::vector<std::vector<R>> out;
  out.reserve(frames.size());
  for (const auto& f : frames) {
    if (job.chunked) out.push_back(runtime::from_frame<std::vector<R>>(f));
    else out.push_back({runtime::from_frame<R>(f)});
  }
  return out;
}

// The plan's combine calls, run here, in plan order.
template <class R>
R reduce_here(const ReducePlan& plan, std::vector<std::vector<R>> slots,
              const std::function<R(std::vector<R>)>& combine) {
  slots.resize(plan.slots());
  for (std::size_t k = 0; k < plan.nodes.size(); ++k) {
    std::vector<R> batch;
    for (auto p : plan.nodes[k].parts)
      std::move(slots[p].begin(), slots[p].end(), std::back_inserter(batch));
    slots[plan.leaves + k] = {combine(std::move(batch))};
  }
  auto& root = slots.at(plan.root);
  if (root.size() != 1) throw std::logic_error("graph: the reduction did not end in one result");
  return std::move(root.front());
}

}  // namespace detail

/// Every fn(input), in input order; an empty vector for no inputs.
template <class R, class P>
std::vector<R> execute(const MapGraph<R, P>& g, Client& client, const ExecuteOptions& options = {}) {
  detail::validate(options);
  auto job = detail::map_job(g, options.chunksize);
  std::vector<R> out;
  out.reserve(g.size());
  for (auto& batch : detail::decode_batches<R>(job, detail::run(client, job, options)))
    std::move(batch.begin(), batch.end(), std::back_inserter(out));
  if (out.size() != g.size())
    throw std::runtime_error("graph: the map tasks returned a different number of results");
  detail::arm_exit_watchdog(options);
  return out;
}

/// The map results reduced with the graph's combine and mode.
template <class R, class P>
R execute(const ReduceGraph<R, P>& g, Client& client, const ExecuteOptions& options = {}) {
  detail::validate(options);
  const auto& ro = g.options;
  detail::validate_reduce(ro.mode, ro.n_batch, g.map.size(), ro.initial.has_value());
  auto job = detail::map_job(g.map, options.chunksize);
  const std::size_t leaves = job.tasks.size() + (ro.initial ? 1 : 0);
  const auto plan = plan_reduce(leaves, ro.mode, ro.n_batch, job.chunked);
  R result{};
  if (options.reduce_in_pool) {
    job.plan = fuse_levels(plan, options.reduce_fuse_levels);
    job.combine = runtime::FunctionRegistry::global().name_of(g.combine);
    job.params = g.params;
    if (ro.initial)
      job.initial = job.chunked ? runtime::to_frame(std::vector<R>{*ro.initial})
                                : runtime::to_frame(*ro.initial);
    result = runtime::from_frame<R>(detail::run(client, job, options).at(0));
  } else {
    (void)runtime::FunctionRegistry::global().name_of(g.combine);  // registered, as in the pool
    std::vector<std::vector<R>> slots;
    if (ro.initial) slots.push_back({*ro.initial});
    for (auto& batch : detail::decode_batches<R>(job, detail::run(client, job, options)))
      slots.push_back(std::move(batch));
    result = detail::reduce_here(plan, std::move(slots), g.combine_local);
  }
  detail::arm_exit_watchdog(options);
  return result;
}

}  // namespace taskwire::graph
