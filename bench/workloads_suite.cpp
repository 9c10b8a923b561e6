#include "bench/workloads_suite.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <stdexcept>

#include "bench/stats.hpp"
#include "bench/workload_kernels.hpp"
#include "bench/workload_threads.hpp"

namespace taskwire::bench {
namespace {

namespace k = kernels;
using Clock = std::chrono::steady_clock;

// scatter_each, `batch` values at a time (0: all at once): the client then serializes at most
// a batch before sending it, and the next batch reuses that memory.
template <class T>
std::vector<Future<T>> scatter_batched(Client& client, const std::vector<T>& values, int batch) {
  if (batch <= 0 || static_cast<std::size_t>(batch) >= values.size())
    return client.scatter_each(values);
  std::vector<Future<T>> out;
  for (std::size_t i = 0; i < values.size(); i += static_cast<std::size_t>(batch)) {
    const auto end = std::min(values.size(), i + static_cast<std::size_t>(batch));
    for (auto& f : client.scatter_each(std::vector<T>(values.begin() + i, values.begin() + end)))
      out.push_back(std::move(f));
  }
  return out;
}

// scatter_batched, its time in timing.scatter_seconds.
template <class T>
std::vector<Future<T>> timed_scatter(Client& client, const std::vector<T>& values, int batch,
                                     WorkloadTiming& timing) {
  const auto t0 = Clock::now();
  auto out = scatter_batched(client, values, batch);
  timing.scatter_seconds = seconds_since(t0);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tiled Cholesky: right-looking, tile (i, j) of the lower triangle at index i * (i + 1) / 2 + j.
class Cholesky final : public Workload {
 public:
  explicit Cholesky(const WorkloadSizes& s) : s_(s), t_(static_cast<std::size_t>(s.chol_tiles)) {}
  std::string name() const override { return "cholesky"; }

  void prepare() override {
    a_.resize(t_ * (t_ + 1) / 2);
    parallel_for(a_.size(), s_.threads, [&](std::size_t x) {
      const auto [i, j] = coords(x);
      a_[x] = k::chol_tile(s_.seed, s_.chol_tiles, s_.chol_tile, static_cast<int>(i),
                           static_cast<int>(j));
    });
  }

  WorkloadTiming run_threads() override {
    std::vector<k::Tile> work = a_;  // a copy: the factorization overwrites it (not timed)
    std::vector<std::size_t> last(a_.size(), kNone);  // the task that last wrote each tile
    ThreadDag dag;
    const auto dep = [&](std::size_t x) {
      return last[x] == kNone ? std::vector<std::size_t>{} : std::vector{last[x]};
    };
    const auto deps = [&](std::initializer_list<std::size_t> xs) {
      std::vector<std::size_t> d;
      for (auto x : xs)
        if (last[x] != kNone) d.push_back(last[x]);
      return d;
    };
    for (std::size_t kk = 0; kk < t_; ++kk) {
      const auto kd = at(kk, kk);
      last[kd] = dag.add([&work, kd] { work[kd] = k::chol_potrf(work[kd]); }, dep(kd));
      for (std::size_t i = kk + 1; i < t_; ++i) {
        const auto ik = at(i, kk);
        last[ik] = dag.add([&work, kd, ik] { work[ik] = k::chol_trsm(work[kd], work[ik]); },
                           deps({kd, ik}));
      }
      for (std::size_t i = kk + 1; i < t_; ++i)
        for (std::size_t j = kk + 1; j <= i; ++j) {
          const auto ij = at(i, j), ik = at(i, kk), jk = at(j, kk);
          last[ij] = i == j
                         ? dag.add([&work, ij, ik] { work[ij] = k::chol_syrk(work[ij], work[ik]); },
                                   deps({ij, ik}))
                         : dag.add([&work, ij, ik,
                                    jk] { work[ij] = k::chol_gemm(work[ij], work[ik], work[jk]); },
                                   deps({ij, ik, jk}));
        }
    }
    const auto t0 = Clock::now();
    dag.run(s_.threads);
    WorkloadTiming timing{0, seconds_since(t0)};
    check(work);
    return timing;
  }

  WorkloadTiming run_cluster(Client& client) override {
    WorkloadTiming timing;
    std::vector<Future<k::Tile>> f = timed_scatter(client, a_, s_.scatter_batch, timing);
    const auto t0 = Clock::now();
    for (std::size_t kk = 0; kk < t_; ++kk) {
      const auto kd = at(kk, kk);
      f[kd] = client.submit(k::chol_potrf, f[kd]);
      for (std::size_t i = kk + 1; i < t_; ++i)
        f[at(i, kk)] = client.submit(k::chol_trsm, f[kd], f[at(i, kk)]);
      for (std::size_t i = kk + 1; i < t_; ++i)
        for (std::size_t j = kk + 1; j <= i; ++j)
          f[at(i, j)] = i == j
                            ? client.submit(k::chol_syrk, f[at(i, i)], f[at(i, kk)])
                            : client.submit(k::chol_gemm, f[at(i, j)], f[at(i, kk)], f[at(j, kk)]);
    }
    client.wait(f);
    timing.compute_seconds = seconds_since(t0);
    check(client.gather(f));
    return timing;
  }

  std::string checked() const override {
    return fmt::format("||A - L L^T||_F / ||A||_F = {:.2e}, every L equal bit for bit", residual_);
  }

 private:
  static constexpr std::size_t kNone = ~std::size_t{0};
  static std::size_t at(std::size_t i, std::size_t j) { return i * (i + 1) / 2 + j; }
  std::pair<std::size_t, std::size_t> coords(std::size_t x) const {
    std::size_t i = 0;
    while (at(i + 1, 0) <= x) ++i;
    return {i, x - at(i, 0)};
  }

  // The first result is checked by its residual; every later one must equal it bit for bit
  // (the same kernels in the same order per tile), or have as small a residual.
  void check(const std::vector<k::Tile>& l) {
    if (reference_.empty()) {
      residual_ = residual(l);
      if (!(residual_ < 1e-12))
        throw std::runtime_error(fmt::format("cholesky: residual {:.3e}", residual_));
      reference_ = l;
      return;
    }
    if (l == reference_) return;
    const double r = residual(l);
    if (!(r < 1e-12)) throw std::runtime_error(fmt::format("cholesky: residual {:.3e}", r));
  }

  // ||A - L L^T||_F / ||A||_F over the lower tiles (an off-diagonal tile counts twice).
  double residual(const std::vector<k::Tile>& l) const {
    std::vector<double> r2(a_.size()), a2(a_.size());
    parallel_for(a_.size(), s_.threads, [&](std::size_t x) {
      const auto [i, j] = coords(x);
      k::Tile r = a_[x];
      for (std::size_t kk = 0; kk <= j; ++kk) r = k::chol_gemm(r, l[at(i, kk)], l[at(j, kk)]);
      const double w = i == j ? 1.0 : 2.0;
      for (std::size_t e = 0; e < r.size(); ++e)
        r2[x] += w * r[e] * r[e], a2[x] += w * a_[x][e] * a_[x][e];
    });
    double rs = 0, as = 0;
    for (std::size_t x = 0; x < a_.size(); ++x) rs += r2[x], as += a2[x];
    return std::sqrt(rs / as);
  }

  WorkloadSizes s_;
  std::size_t t_;
  std::vector<k::Tile> a_, reference_;
  double residual_ = 0;
};

// ---------------------------------------------------------------------------------------------
// k-means: chunks of points scattered once; per iteration a map of partial sums with the
// centroids as a shared argument, a tree of adds and the update, all left in the cluster.
class KMeans final : public Workload {
 public:
  explicit KMeans(const WorkloadSizes& s) : s_(s) {}
  std::string name() const override { return "kmeans"; }

  void prepare() override {
    const auto dims = static_cast<std::size_t>(s_.kmeans_dims);
    const auto chunks = static_cast<std::size_t>(s_.kmeans_chunks);
    const std::size_t per_chunk =
        std::max<std::size_t>(1, s_.kmeans_bytes / sizeof(double) / dims / chunks);
    chunks_.resize(chunks);
    parallel_for(chunks, s_.threads, [&](std::size_t c) {
      chunks_[c] = k::kmeans_points(s_.seed, c, per_chunk, s_.kmeans_dims, s_.kmeans_k);
    });
    initial_ = {static_cast<double>(s_.kmeans_k), static_cast<double>(dims)};
    for (std::size_t j = 0; j < static_cast<std::size_t>(s_.kmeans_k); ++j)  // the first k points
      for (std::size_t a = 0; a < dims; ++a) initial_.push_back(chunks_[0].at(j * dims + a));
  }

  WorkloadTiming run_threads() override {
    const auto t0 = Clock::now();
    k::Centroids c = initial_;
    std::vector<k::Partial> partials(chunks_.size());
    for (int it = 0; it < s_.kmeans_iterations; ++it) {
      parallel_for(chunks_.size(), s_.threads,
                   [&](std::size_t i) { partials[i] = k::kmeans_partial(chunks_[i], c); });
      c = k::kmeans_update(reduce_in_pairs(partials, k::kmeans_add), c);
    }
    WorkloadTiming timing{0, seconds_since(t0)};
    check(c);
    return timing;
  }

  WorkloadTiming run_cluster(Client& client) override {
    WorkloadTiming timing;
    const auto chunks = timed_scatter(client, chunks_, s_.scatter_batch, timing);
    const auto t0 = Clock::now();
    Future<k::Centroids> c = client.scatter(initial_);
    for (int it = 0; it < s_.kmeans_iterations; ++it) {
      auto partials = client.map(k::kmeans_partial, chunks, taskwire::fixed(c));
      auto total = reduce_in_pairs(std::move(partials),
                                   [&](const Future<k::Partial>& a, const Future<k::Partial>& b) {
                                     return client.submit(k::kmeans_add, a, b);
                                   });
      c = client.submit(k::kmeans_update, total, c);
    }
    const k::Centroids result = c.get();
    timing.compute_seconds = seconds_since(t0);
    check(result);
    return timing;
  }

  std::string checked() const override {
    return fmt::format(
        "{} iterations, centroids equal bit for bit to the threads run's, which moved "
        "them by {:.3g} from the start",
        s_.kmeans_iterations, moved_);
  }

 private:
  void check(const k::Centroids& c) {
    if (reference_.empty()) {
      reference_ = c;
      for (std::size_t i = 2; i < c.size(); ++i)
        moved_ = std::max(moved_, std::abs(c[i] - initial_[i]));
      if (!std::isfinite(moved_) || moved_ == 0)
        throw std::runtime_error("kmeans: the centroids did not move");
      return;
    }
    if (c != reference_)
      throw std::runtime_error("kmeans: the centroids differ from the threads run's");
  }

  WorkloadSizes s_;
  std::vector<k::Points> chunks_;
  k::Centroids initial_, reference_;
  double moved_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Sample sort: parts sorted, sampled, splitters from all samples, each part split into P pieces
// (unpack: one future per piece), output j merges piece j of every part.
class SampleSort final : public Workload {
 public:
  explicit SampleSort(const WorkloadSizes& s) : s_(s), p_(static_cast<std::size_t>(s.sort_parts)) {}
  std::string name() const override { return "sort"; }

  void prepare() override {
    parts_.resize(p_);
    const std::size_t per_part = s_.sort_keys / p_;
    parallel_for(p_, s_.threads, [&](std::size_t i) {
      parts_[i] =
          k::sort_input(s_.seed, i, i + 1 == p_ ? s_.sort_keys - per_part * (p_ - 1) : per_part);
    });
    checksum_ = 0;
    for (const auto& p : parts_) checksum_ += k::keys_checksum(p);
  }

  WorkloadTiming run_threads() override {
    const auto t0 = Clock::now();
    std::vector<k::Keys> sorted(p_), samples(p_), out(p_);
    std::vector<std::vector<k::Keys>> pieces(p_);
    parallel_for(p_, s_.threads, [&](std::size_t i) {
      sorted[i] = k::sort_local(parts_[i]);
      samples[i] = k::sort_sample(sorted[i], s_.sort_samples);
    });
    const k::Keys splitters = k::sort_splitters(samples, static_cast<std::int64_t>(p_));
    parallel_for(p_, s_.threads,
                 [&](std::size_t i) { pieces[i] = k::sort_split(sorted[i], splitters); });
    parallel_for(p_, s_.threads, [&](std::size_t j) {
      std::vector<k::Keys> mine(p_);
      for (std::size_t i = 0; i < p_; ++i) mine[i] = std::move(pieces[i][j]);
      out[j] = k::sort_merge(mine);
    });
    WorkloadTiming timing{0, seconds_since(t0)};
    check(out);
    return timing;
  }

  WorkloadTiming run_cluster(Client& client) override {
    WorkloadTiming timing;
    const auto parts = timed_scatter(client, parts_, s_.scatter_batch, timing);
    const auto t0 = Clock::now();
    const auto sorted = client.map(k::sort_local, parts);
    const auto samples =
        client.map(k::sort_sample, sorted, taskwire::fixed(std::int64_t{s_.sort_samples}));
    const auto splitters = client.submit(k::sort_splitters, samples, static_cast<std::int64_t>(p_));
    std::vector<std::vector<Future<k::Keys>>> pieces;
    for (const auto& part : sorted)
      pieces.push_back(client.unpack(client.submit(k::sort_split, part, splitters), p_));
    std::vector<Future<k::Keys>> out;
    for (std::size_t j = 0; j < p_; ++j) {
      std::vector<Future<k::Keys>> column;
      for (std::size_t i = 0; i < p_; ++i) column.push_back(pieces[i][j]);
      out.push_back(client.submit(k::sort_merge, column));
    }
    client.wait(out);
    timing.compute_seconds = seconds_since(t0);
    check(client.gather(out));
    return timing;
  }

  std::string checked() const override {
    return fmt::format("{} keys in order, checksum {:016x} as the input's", s_.sort_keys,
                       checksum_);
  }

 private:
  void check(const std::vector<k::Keys>& out) const {
    std::size_t n = 0;
    std::uint64_t sum = 0;
    const k::Keys* previous = nullptr;
    for (const auto& o : out) {
      if (!std::is_sorted(o.begin(), o.end()))
        throw std::runtime_error("sort: an output is not sorted");
      if (previous && !previous->empty() && !o.empty() && previous->back() > o.front())
        throw std::runtime_error("sort: outputs overlap");
      if (!o.empty()) previous = &o;
      n += o.size();
      sum += k::keys_checksum(o);
    }
    if (n != s_.sort_keys || sum != checksum_)
      throw std::runtime_error(
          fmt::format("sort: {} keys of checksum {:016x}, the input {} of {:016x}", n, sum,
                      s_.sort_keys, checksum_));
  }

  WorkloadSizes s_;
  std::size_t p_;
  std::vector<k::Keys> parts_;
  std::uint64_t checksum_ = 0;
};

}  // namespace

std::unique_ptr<Workload> make_cholesky(const WorkloadSizes& s) {
  return std::make_unique<Cholesky>(s);
}
std::unique_ptr<Workload> make_kmeans(const WorkloadSizes& s) {
  return std::make_unique<KMeans>(s);
}
std::unique_ptr<Workload> make_sort(const WorkloadSizes& s) {
  return std::make_unique<SampleSort>(s);
}

std::unique_ptr<Workload> make_workload(const std::string& name, const WorkloadSizes& s) {
  if (name == "cholesky") return make_cholesky(s);
  if (name == "kmeans") return make_kmeans(s);
  if (name == "sort") return make_sort(s);
  throw std::invalid_argument("unknown workload '" + name + "' (cholesky, kmeans, sort)");
}

}  // namespace taskwire::bench
