#pragma once
// Map/reduce graphs: a plain description of work, with nothing of a cluster in it; run it with
// graph::execute (graph/execute.hpp) on any connected Client.
//
//   double f(double x);                      TASKWIRE_REGISTER(f);
//   double sum(std::vector<double> parts);   TASKWIRE_REGISTER(sum);
//   auto g = graph::reduce(graph::map(f, xs), sum);                       // binary tree
//   auto h = graph::reduce(graph::map(f, xs), sum, {.mode = graph::ReduceMode::tree_n, .n_batch = 8});
//   double total = graph::execute(g, client);
//   auto parts = client.scatter_each(chunks);                      // data already in the cluster
//   double t2 = graph::execute(graph::reduce(graph::map(f_chunk, parts), sum), client);
//
// `fn` and `combine` must be registered (TASKWIRE_REGISTER). `combine` takes a batch of results,
// optionally followed by one parameter (given to reduce()), and returns one result; it must give
// the same answer as folding the batch left to right with an associative operation. Then every
// reduce mode returns what a sequential reduction of the map results in input order returns.
//
// Reduce modes:
// - single_node: one combine call over every map result.
// - tree (default): a binary tree of combine calls.
// - tree_n: a tree of combine calls over batches of n_batch; a trailing batch of one is carried
//   up a level unchanged. With a single input (chunksize 1, no initial value), tree and tree_n
//   return fn's result without calling combine; single_node always calls combine.
// The tree is built over map *tasks*: with ExecuteOptions::chunksize > 1 a leaf-level combine
// receives every result of its n_batch chunks in one batch, and combine is always called.
//
// Bad graphs fail loudly with std::invalid_argument, from reduce() and again from execute():
// an unknown mode; n_batch below 2 (in every mode, though only tree_n reads it); a reduce over
// an empty input list without ReduceOptions::initial; a map over futures with chunksize > 1 (from
// execute()). A map over no inputs is valid and returns an empty vector. A result type that cannot be serialized is a compile-time error.
#include <taskwire/client/future.hpp>
#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/runtime/serialize.hpp>

#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace taskwire::graph {

enum class ReduceMode { single_node, tree, tree_n };

/// "single_node", "tree" or "tree_n"; anything else throws std::invalid_argument naming them.
ReduceMode reduce_mode_from_string(std::string_view name);
std::string_view to_string(ReduceMode mode);

template <class R>
struct ReduceOptions {
  ReduceMode mode = ReduceMode::tree;
  std::size_t n_batch = 2;  ///< combine batch size of tree_n; must be >= 2 in every mode
  /// Reduced first, before the map results, as std::accumulate's init (so it is used exactly
  /// once); the result of a reduce over no inputs. Without it such a reduce is an error.
  std::optional<R> initial{};
};

/// fn applied to every input: the map stage. `P` is fn's declared parameter type. The inputs
/// are values (sent with the tasks) or futures to data already in the cluster, never both.
template <class R, class P>
struct MapGraph {
  using result_type = R;
  using input_type = std::remove_cvref_t<P>;
  R (*fn)(P) = nullptr;
  std::vector<input_type> inputs;
  std::vector<Future<input_type>> futures;
  std::size_t size() const noexcept { return inputs.size() + futures.size(); }
};

/// A map stage followed by a reduction of its results.
template <class R, class P>
struct ReduceGraph {
  using result_type = R;
  MapGraph<R, P> map;
  const void* combine = nullptr;                   ///< the registered combine function
  std::function<R(std::vector<R>)> combine_local;  ///< the same, parameter bound, for the client
  std::vector<runtime::Frame> params;              ///< the reduce parameter, serialized (0 or 1)
  ReduceOptions<R> options;
};

namespace detail {
/// Throws std::invalid_argument for a bad mode or n_batch, or an empty reduce without initial.
void validate_reduce(ReduceMode mode, std::size_t n_batch, std::size_t ninputs, bool has_initial);

/// A compile-time error naming the type and the fix when R cannot be sent (runtime/serialize.hpp).
template <class R>
constexpr void check_result_type() {
  (void)runtime::check_sendable<R>();
}
}  // namespace detail

/// The map stage: fn(input) for each input; `inputs` convert to fn's parameter type.
template <class R, class P, class T>
MapGraph<R, P> map(R (*fn)(P), const std::vector<T>& inputs) {
  detail::check_result_type<R>();
  static_assert(std::is_convertible_v<const T&, std::remove_cvref_t<P>>,
                "taskwire::graph::map: the inputs do not convert to the function's parameter type");
  MapGraph<R, P> g;
  g.fn = fn;
  g.inputs.reserve(inputs.size());
  for (const auto& x : inputs) g.inputs.push_back(static_cast<std::remove_cvref_t<P>>(x));
  return g;
}

/// The map stage over data already in the cluster (scattered, or results of earlier tasks):
/// fn(the result of future i) for each, one task per future, each run where its data is (a
/// `const P&` parameter reads it in place). ExecuteOptions::chunksize must be 1 for it.
template <class R, class P, class T>
MapGraph<R, P> map(R (*fn)(P), const std::vector<Future<T>>& inputs) {
  detail::check_result_type<R>();
  static_assert(std::is_same_v<T, std::remove_cvref_t<P>>,
                "taskwire::graph::map: a Future<T> input must match the function's parameter type");
  MapGraph<R, P> g;
  g.fn = fn;
  g.futures = inputs;
  return g;
}

/// Reduces the results of `g` with `combine(std::vector<R>) -> R`.
template <class R, class P, class C>
ReduceGraph<R, P> reduce(MapGraph<R, P> g, R (*combine)(C), ReduceOptions<R> options = {}) {
  static_assert(std::is_same_v<std::remove_cvref_t<C>, std::vector<R>>,
                "taskwire::graph::reduce: combine must take a std::vector of the map's result type");
  detail::validate_reduce(options.mode, options.n_batch, g.size(),
                          options.initial.has_value());
  ReduceGraph<R, P> r;
  r.map = std::move(g);
  r.combine = reinterpret_cast<const void*>(combine);
  r.combine_local = [combine](std::vector<R> batch) { return combine(std::move(batch)); };
  r.options = std::move(options);
  return r;
}

/// Reduces with `combine(std::vector<R>, params) -> R`; `params` travels with every combine call.
template <class R, class P, class C, class Q, class Params>
ReduceGraph<R, P> reduce(MapGraph<R, P> g, R (*combine)(C, Q), Params&& params,
                         ReduceOptions<R> options = {}) {
  static_assert(std::is_same_v<std::remove_cvref_t<C>, std::vector<R>>,
                "taskwire::graph::reduce: combine must take a std::vector of the map's result type");
  using Param = std::remove_cvref_t<Q>;
  (void)runtime::check_sendable<Param>();  // fails to compile, naming the type, if it cannot be sent
  detail::validate_reduce(options.mode, options.n_batch, g.size(),
                          options.initial.has_value());
  Param bound(std::forward<Params>(params));
  ReduceGraph<R, P> r;
  r.map = std::move(g);
  r.combine = reinterpret_cast<const void*>(combine);
  r.params.push_back(runtime::to_frame(bound));
  r.combine_local = [combine, bound](std::vector<R> batch) { return combine(std::move(batch), bound); };
  r.options = std::move(options);
  return r;
}

}  // namespace taskwire::graph
