#include "bench/dag_workloads.hpp"
#include "bench/splitmix.hpp"

#include <taskwire/runtime/function_registry.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>

namespace dag_fns {

using taskwire::bench::Payload;

using taskwire::bench::splitmix64;

/// `count` uniform doubles in [0, 1), the same for the same (seed, index) on any rank.
Payload generate(unsigned long long seed, int index, long long count) {
  Payload x(static_cast<std::size_t>(count));
  std::uint64_t state = seed * 0x100000001b3ULL + static_cast<std::uint64_t>(index) * 65'537;
  for (double& v : x) v = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
  return x;
}

/// One step of a 3-point average on a ring of blocks: `left` and `right` supply the halos.
Payload stencil_step(Payload left, Payload mid, Payload right) {
  const std::size_t n = mid.size();
  Payload out(n);
  if (n == 0) return out;
  for (std::size_t i = 0; i < n; ++i) {
    const double l = i == 0 ? left.back() : mid[i - 1];
    const double r = i + 1 == n ? right.front() : mid[i + 1];
    out[i] = (l + mid[i] + r) / 3.0;
  }
  return out;
}

Payload add(Payload a, Payload b) {
  if (a.size() != b.size()) throw std::invalid_argument("add: sizes differ");
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

/// A weighted sum, so that a permuted or shifted payload does not pass.
double checksum(Payload x) {
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * static_cast<double>(1 + i % 7);
  return s;
}

/// (rows x inner) times (inner x rows), row-major.
Payload matmul(Payload a, Payload b, int rows, int inner) {
  const auto n = static_cast<std::size_t>(rows), k = static_cast<std::size_t>(inner);
  if (a.size() != n * k || b.size() != k * n) throw std::invalid_argument("matmul: shapes differ");
  Payload c(n * n, 0.0);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t q = 0; q < k; ++q) {
      const double arq = a[r * k + q];
      const double* brow = &b[q * n];
      double* crow = &c[r * n];
      for (std::size_t col = 0; col < n; ++col) crow[col] += arq * brow[col];
    }
  return c;
}

/// Piece `part` of `parts` equal pieces of `x`.
Payload split(Payload x, int part, int parts) {
  const std::size_t piece = x.size() / static_cast<std::size_t>(parts);
  const auto begin = x.begin() + static_cast<std::ptrdiff_t>(piece * static_cast<std::size_t>(part));
  return Payload(begin, begin + static_cast<std::ptrdiff_t>(piece));
}

Payload concat4(Payload a, Payload b, Payload c, Payload d) {
  Payload out;
  out.reserve(a.size() + b.size() + c.size() + d.size());
  for (const Payload* p : {&a, &b, &c, &d}) out.insert(out.end(), p->begin(), p->end());
  return out;
}

}  // namespace dag_fns

TASKWIRE_REGISTER(dag_fns::generate);
TASKWIRE_REGISTER(dag_fns::stencil_step);
TASKWIRE_REGISTER(dag_fns::add);
TASKWIRE_REGISTER(dag_fns::checksum);
TASKWIRE_REGISTER(dag_fns::matmul);
TASKWIRE_REGISTER(dag_fns::split);
TASKWIRE_REGISTER(dag_fns::concat4);

namespace taskwire::bench {
namespace {

constexpr unsigned long long kSeed = 42;
constexpr int kShuffleParts = 4;  // concat4's arity

double fold(const std::vector<double>& sums) {
  double total = 0;
  for (double s : sums) total += s;
  return total;
}

// Every call a task; the checksums are gathered at the end.
struct ClusterExec {
  Client& client;
  template <class R, class... A, class... Args>
  Future<R> operator()(R (*fn)(A...), Args&&... args) {
    return client.submit(fn, std::forward<Args>(args)...);
  }
  double total(const std::vector<Future<double>>& sums) { return fold(client.gather(sums)); }
};

// Every call run here and now, on copies of its arguments (as a task receives them).
struct DirectExec {
  template <class R, class... A, class... Args>
  R operator()(R (*fn)(A...), Args&&... args) {
    return fn(args...);
  }
  double total(const std::vector<double>& sums) { return fold(sums); }
};

template <class Ex>
using PayloadOf = decltype(std::declval<Ex&>()(dag_fns::generate, 0ULL, 0, 0LL));

template <class Ex>
using SumOf = decltype(std::declval<Ex&>()(dag_fns::checksum, std::declval<PayloadOf<Ex>&>()));

// Pairwise adds, level by level, until one is left.
template <class Ex>
PayloadOf<Ex> tree_of_adds(Ex& ex, std::vector<PayloadOf<Ex>> level) {
  while (level.size() > 1) {
    std::vector<PayloadOf<Ex>> next;
    for (std::size_t k = 0; k + 1 < level.size(); k += 2) next.push_back(ex(dag_fns::add, level[k], level[k + 1]));
    if (level.size() % 2) next.push_back(level.back());
    level = std::move(next);
  }
  return level.front();
}

template <class Ex>
double checksums(Ex& ex, const std::vector<PayloadOf<Ex>>& blocks) {
  std::vector<SumOf<Ex>> sums;
  for (const auto& b : blocks) sums.push_back(ex(dag_fns::checksum, b));
  return ex.total(sums);
}

long long doubles(std::size_t bytes) { return std::max<long long>(1, static_cast<long long>(bytes / 8)); }
int matmul_rows(std::size_t bytes) {
  return std::max(1, static_cast<int>(std::sqrt(static_cast<double>(doubles(bytes)))));
}

template <class Ex>
double stencil(Ex& ex, std::size_t bytes, const DagShape& s) {
  const int w = s.stencil_width;
  std::vector<PayloadOf<Ex>> x;
  for (int i = 0; i < w; ++i) x.push_back(ex(dag_fns::generate, kSeed, i, doubles(bytes)));
  for (int t = 0; t < s.stencil_steps; ++t) {
    std::vector<PayloadOf<Ex>> next;
    for (int i = 0; i < w; ++i)
      next.push_back(ex(dag_fns::stencil_step, x[(i + w - 1) % w], x[i], x[(i + 1) % w]));
    x = std::move(next);
  }
  return checksums(ex, x);
}

template <class Ex>
double matmul(Ex& ex, std::size_t bytes, const DagShape& s) {
  const int n = s.matmul_blocks, rows = matmul_rows(bytes), inner = s.matmul_inner;
  const long long block = static_cast<long long>(rows) * inner;
  std::vector<PayloadOf<Ex>> a, b, c;
  for (int i = 0; i < n * n; ++i) a.push_back(ex(dag_fns::generate, kSeed + 1, i, block));
  for (int i = 0; i < n * n; ++i) b.push_back(ex(dag_fns::generate, kSeed + 2, i, block));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      std::vector<PayloadOf<Ex>> products;
      for (int k = 0; k < n; ++k)
        products.push_back(ex(dag_fns::matmul, a[i * n + k], b[k * n + j], rows, inner));
      c.push_back(tree_of_adds(ex, std::move(products)));
    }
  return checksums(ex, c);
}

template <class Ex>
double tree(Ex& ex, std::size_t bytes, const DagShape& s) {
  std::vector<PayloadOf<Ex>> leaves;
  for (int i = 0; i < s.tree_leaves; ++i) leaves.push_back(ex(dag_fns::generate, kSeed + 3, i, doubles(bytes)));
  return checksums(ex, {tree_of_adds(ex, std::move(leaves))});
}

// Every input is cut into kShuffleParts pieces of `bytes` (next to it, no transfer); output j
// joins piece j of every input, so each output reads from every input's worker.
template <class Ex>
double shuffle(Ex& ex, std::size_t bytes, const DagShape&) {
  constexpr int p = kShuffleParts;
  std::vector<std::vector<PayloadOf<Ex>>> pieces(p);
  for (int i = 0; i < p; ++i) {
    auto input = ex(dag_fns::generate, kSeed + 4, i, p * doubles(bytes));
    for (int j = 0; j < p; ++j) pieces[i].push_back(ex(dag_fns::split, input, j, p));
  }
  std::vector<PayloadOf<Ex>> outputs;
  for (int j = 0; j < p; ++j)
    outputs.push_back(ex(dag_fns::concat4, pieces[0][j], pieces[1][j], pieces[2][j], pieces[3][j]));
  return checksums(ex, outputs);
}

template <class Ex>
double run_graph(Ex& ex, const std::string& workload, std::size_t bytes, const DagShape& shape) {
  if (workload == "stencil") return stencil(ex, bytes, shape);
  if (workload == "matmul") return matmul(ex, bytes, shape);
  if (workload == "tree") return tree(ex, bytes, shape);
  if (workload == "shuffle") return shuffle(ex, bytes, shape);
  throw std::invalid_argument("unknown workload '" + workload +
                              "' (stencil, matmul, tree, shuffle)");
}

int stencil_tasks(const DagShape& s) { return s.stencil_width * (s.stencil_steps + 2); }
int matmul_tasks(const DagShape& s) {
  const int n = s.matmul_blocks;
  return 2 * n * n + n * n * n + n * n * (n - 1) + n * n;
}
int tree_tasks(const DagShape& s) { return 2 * s.tree_leaves; }
int shuffle_tasks(const DagShape&) {
  constexpr int p = kShuffleParts;
  return p + p * p + 2 * p;
}

}  // namespace

const std::vector<DagWorkload>& dag_workloads() {
  static const std::vector<DagWorkload> all{{"stencil", stencil_tasks},
                                            {"matmul", matmul_tasks},
                                            {"tree", tree_tasks},
                                            {"shuffle", shuffle_tasks}};
  return all;
}

double run_in_cluster(Client& client, const std::string& workload, std::size_t bytes,
                      const DagShape& shape) {
  ClusterExec ex{client};
  return run_graph(ex, workload, bytes, shape);
}

double run_directly(const std::string& workload, std::size_t bytes, const DagShape& shape) {
  DirectExec ex;
  return run_graph(ex, workload, bytes, shape);
}

std::size_t payload_bytes(const std::string& workload, std::size_t bytes) {
  if (workload == "matmul") {
    const auto rows = static_cast<std::size_t>(matmul_rows(bytes));
    return rows * rows * 8;
  }
  return static_cast<std::size_t>(doubles(bytes)) * 8;
}

}  // namespace taskwire::bench
