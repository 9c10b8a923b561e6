#include "bench/array.hpp"
#include "bench/cluster_ranks.hpp"
#include "bench/splitmix.hpp"
#include "bench/stats.hpp"

#include <taskwire/launch/mpi/launch.hpp>
#include <taskwire/runtime/function_registry.hpp>
#include <taskwire/runtime/large_buffer.hpp>

#include <boost/serialization/vector.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

namespace array_fns {

// One block of the matrix, row-major. Its doubles come from the runtime's reusable large
// buffers, left uninitialised until written (generated, or loaded by its deserialization):
// zero-filling 50 MB first was a tenth of a worker's time, and fresh pages for each decoded
// or generated block 40 % (perf, mpiexec.mpich -n 5 taskwire-bench array).
struct Block {
  int rows = 0, cols = 0;
  std::vector<double, taskwire::runtime::BufferAllocator<double>> data;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & rows & cols & data;
  }
};

// Which block to generate: the same (seed, i, j) gives the same numbers on any rank.
struct BlockSpec {
  unsigned long long seed = 0;
  int i = 0, j = 0, rows = 0, cols = 0;
  template <class Archive>
  void serialize(Archive& ar, unsigned) {
    ar & seed & i & j & rows & cols;
  }
};

using taskwire::bench::splitmix64;

Block random_block(BlockSpec s) {
  Block b{s.rows, s.cols, {}};
  b.data.resize(static_cast<std::size_t>(s.rows) * s.cols);
  std::uint64_t state = s.seed * 0x100000001b3ULL + static_cast<std::uint64_t>(s.i) * 65'537 +
                        static_cast<std::uint64_t>(s.j);
  for (double& x : b.data) x = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
  return b;
}

double block_sum(Block b) {
  double s = 0;
  for (double x : b.data) s += x;
  return s;
}

// sum((X_ji + X_ij^T)) for block (i, j) in one task: add, transpose and sum fused, as Dask's
// graph optimisation fuses these blockwise steps (one task per block, nothing in between
// serialised), and in one pass over both blocks, as a C++ programmer fuses loops: every
// element of the sum X_ji + X_ij^T is formed (cache-blocked transposed reads) and added up,
// never stored (storing it cost a 50 MB write per block).
double sum_add_transposed(Block a, Block b) {
  if (a.rows != b.cols || a.cols != b.rows) throw std::invalid_argument("block shapes differ");
  constexpr int tile = 64;
  double total = 0;
  for (int r0 = 0; r0 < a.rows; r0 += tile)
    for (int c0 = 0; c0 < a.cols; c0 += tile) {
      double s = 0;
      for (int r = r0; r < std::min(r0 + tile, a.rows); ++r)
        for (int c = c0; c < std::min(c0 + tile, a.cols); ++c)
          s += a.data[static_cast<std::size_t>(r) * a.cols + c] +
               b.data[static_cast<std::size_t>(c) * b.cols + r];
      total += s;
    }
  return total;
}

double add2(double a, double b) { return a + b; }

}  // namespace array_fns

TASKWIRE_REGISTER(array_fns::random_block);
TASKWIRE_REGISTER(array_fns::sum_add_transposed);
TASKWIRE_REGISTER(array_fns::add2);

namespace taskwire::bench {
namespace {

using array_fns::BlockSpec;

int block_extent(const ArrayOptions& o, int k) {
  const int base = o.n / o.blocks;
  return k + 1 == o.blocks ? o.n - base * (o.blocks - 1) : base;
}

BlockSpec spec_of(const ArrayOptions& o, int i, int j) {
  return {o.seed, i, j, block_extent(o, i), block_extent(o, j)};
}

// The whole graph, from generating X to the scalar: returns the result.
double compute(Client& client, const ArrayOptions& o) {
  using array_fns::Block;
  std::vector<Future<Block>> x;
  for (int i = 0; i < o.blocks; ++i)
    for (int j = 0; j < o.blocks; ++j) x.push_back(client.submit(array_fns::random_block, spec_of(o, i, j)));
  std::vector<Future<double>> sums;
  for (int i = 0; i < o.blocks; ++i)
    for (int j = 0; j < o.blocks; ++j) {
      sums.push_back(
          client.submit(array_fns::sum_add_transposed, x[j * o.blocks + i], x[i * o.blocks + j]));
    }
  x.clear();  // the cluster keeps blocks only while tasks still need them
  while (sums.size() > 1) {
    std::vector<Future<double>> next;
    for (std::size_t k = 0; k + 1 < sums.size(); k += 2)
      next.push_back(client.submit(array_fns::add2, sums[k], sums[k + 1]));
    if (sums.size() % 2) next.push_back(sums.back());
    sums = std::move(next);
  }
  return sums.front().get();
}

// sum((X + X^T)^T) = 2 sum(X), computed here block by block without the cluster.
double direct(const ArrayOptions& o) {
  double s = 0;
  for (int i = 0; i < o.blocks; ++i)
    for (int j = 0; j < o.blocks; ++j) s += array_fns::block_sum(array_fns::random_block(spec_of(o, i, j)));
  return 2 * s;
}

}  // namespace

int run_array(const ArrayOptions& o) {
  if (o.n < 1 || o.blocks < 1 || o.blocks > o.n)
    throw std::invalid_argument("--n must be positive and --blocks between 1 and n");
  mpi::MpiEnvironment env;
  if (!enough_ranks_for_cluster(env, "array", 5)) return 2;
  CsvWriter csv(env.rank() == 1 ? o.csv : "", "backend,n,blocks,workers,seconds,result");
  const int workers = env.size() - 2;
  std::map<std::string, double> median;
  bool all_right = true;
  double expected = 0;
  if (env.rank() == 1) {
    fmt::print("sum((X + X^T)^T), X random {} x {} doubles ({:.2f} GB) in {} x {} blocks, {} "
               "workers x {} thread(s)\n",
               o.n, o.n, 8.0 * o.n * o.n / 1e9, o.blocks, o.blocks, workers, o.nthreads);
    if (o.check) expected = direct(o);
    std::fflush(stdout);
  }
  for (const auto& backend : o.backends) {
    mpi::LaunchOptions lo;
    lo.transport = mpi::parse_transport(backend);
    lo.nthreads = o.nthreads;
    int rc = mpi::run_cluster(env, lo, mpi::Layout{0, 1}, [&](Client& client) {
      std::vector<double> times;
      double result = 0;
      for (int r = 0; r < o.repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        result = compute(client, o);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      const double t = summarize(times).p50;
      const bool right = !o.check || std::abs(result - expected) <= 1e-9 * std::abs(expected);
      all_right = all_right && right;
      median[backend] = t;
      fmt::print("  {:<4} {:>8.3f} s   result {:.6f}   {}\n", backend, t, result,
                 !o.check ? "(not checked)" : right ? "matches the direct computation"
                                                    : fmt::format("WRONG: expected {:.6f}", expected));
      std::fflush(stdout);
      csv.row(fmt::format("{},{},{},{},{:.6f},{:.9g}", backend, o.n, o.blocks, workers, t, result));
    });
    if (rc != 0) all_right = false;
  }
  if (env.rank() == 1 && median.count("mpi") && median.count("tcp"))
    fmt::print("  mpi / tcp time: {:.2f}x ({} over MPI)\n", median["mpi"] / median["tcp"],
               median["mpi"] <= median["tcp"] ? "faster" : "slower");
  return all_right ? 0 : 1;
}

}  // namespace taskwire::bench
