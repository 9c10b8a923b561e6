#include "bench/workload_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <taskwire/runtime/function_registry.hpp>

#include "bench/splitmix.hpp"
#include "bench/workload_threads.hpp"

namespace taskwire::bench::kernels {
namespace {

std::size_t side_of(const Tile& t) {
  const auto b = static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(t.size()))));
  if (b * b != t.size()) throw std::invalid_argument("a tile must be square");
  return b;
}

Tile transposed(const Tile& t, std::size_t b) {
  Tile out(b * b);
  for (std::size_t r = 0; r < b; ++r)
    for (std::size_t c = 0; c < b; ++c) out[c * b + r] = t[r * b + c];
  return out;
}

// c -= a * bt^T... written with bt = B^T so that the inner loop is a contiguous axpy: for each
// row r of C, C[r][:] -= sum_p A[r][p] * Bt[p][:]. Blocked over p so that a block of Bt stays
// in cache. With lower_only, only C[r][0..r] is updated.
void subtract_product(Tile& c, const Tile& a, const Tile& bt, std::size_t b, bool lower_only) {
  constexpr std::size_t kBlock = 64;
  for (std::size_t p0 = 0; p0 < b; p0 += kBlock) {
    const std::size_t p1 = std::min(b, p0 + kBlock);
    for (std::size_t r = 0; r < b; ++r) {
      double* crow = &c[r * b];
      const std::size_t cols = lower_only ? r + 1 : b;
      for (std::size_t p = p0; p < p1; ++p) {
        const double arp = a[r * b + p];
        const double* brow = &bt[p * b];
        for (std::size_t col = 0; col < cols; ++col) crow[col] -= arp * brow[col];
      }
    }
  }
}

}  // namespace

Tile chol_tile(std::uint64_t seed, int tiles, int b, int i, int j) {
  if (j > i || b < 1 || tiles < 1) throw std::invalid_argument("chol_tile: need j <= i, b >= 1");
  const auto n = static_cast<std::size_t>(tiles) * static_cast<std::size_t>(b);
  const auto bs = static_cast<std::size_t>(b);
  Tile t(bs * bs);
  for (std::size_t r = 0; r < bs; ++r)
    for (std::size_t c = 0; c < bs; ++c) {
      std::size_t gr = static_cast<std::size_t>(i) * bs + r,
                  gc = static_cast<std::size_t>(j) * bs + c;
      if (gr == gc) {
        t[r * bs + c] = static_cast<double>(n) + 1.0;
        continue;
      }
      if (gc > gr) std::swap(gr, gc);  // symmetric: the entry of (max, min)
      std::uint64_t state = seed ^ (gr * n + gc) * 0x9e3779b97f4a7c15ULL;
      t[r * bs + c] = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-52 - 1.0;
    }
  return t;
}

Tile chol_potrf(const Tile& a) {
  const std::size_t b = side_of(a);
  Tile l(b * b, 0.0);
  for (std::size_t j = 0; j < b; ++j) {
    double s = a[j * b + j];
    for (std::size_t p = 0; p < j; ++p) s -= l[j * b + p] * l[j * b + p];
    if (!(s > 0)) throw std::domain_error("chol_potrf: the tile is not positive definite");
    const double d = std::sqrt(s);
    l[j * b + j] = d;
    for (std::size_t i = j + 1; i < b; ++i) {
      double v = a[i * b + j];
      for (std::size_t p = 0; p < j; ++p) v -= l[i * b + p] * l[j * b + p];
      l[i * b + j] = v / d;
    }
  }
  return l;
}

Tile chol_trsm(const Tile& l_kk, const Tile& a_ik) {
  const std::size_t b = side_of(l_kk);
  if (a_ik.size() != l_kk.size()) throw std::invalid_argument("chol_trsm: tiles differ in size");
  // Row x of X solves L x^T = a^T: forward substitution, column by column, done for every row
  // at once on X^T so that each step is a contiguous axpy.
  Tile xt = transposed(a_ik, b);
  for (std::size_t p = 0; p < b; ++p) {
    double* xp = &xt[p * b];
    const double d = l_kk[p * b + p];
    for (std::size_t r = 0; r < b; ++r) xp[r] /= d;
    for (std::size_t c = p + 1; c < b; ++c) {
      const double lcp = l_kk[c * b + p];
      double* xc = &xt[c * b];
      for (std::size_t r = 0; r < b; ++r) xc[r] -= lcp * xp[r];
    }
  }
  return transposed(xt, b);
}

Tile chol_syrk(const Tile& a_ii, const Tile& l_ik) {
  const std::size_t b = side_of(a_ii);
  Tile c = a_ii;
  subtract_product(c, l_ik, transposed(l_ik, b), b, true);
  return c;
}

Tile chol_gemm(const Tile& a_ij, const Tile& l_ik, const Tile& l_jk) {
  const std::size_t b = side_of(a_ij);
  if (l_ik.size() != a_ij.size() || l_jk.size() != a_ij.size())
    throw std::invalid_argument("chol_gemm: tiles differ in size");
  Tile c = a_ij;
  subtract_product(c, l_ik, transposed(l_jk, b), b, false);
  return c;
}

Points kmeans_points(std::uint64_t seed, std::size_t chunk, std::size_t count, int dims, int k) {
  const auto d = static_cast<std::size_t>(dims);
  Points p(count * d);
  std::uint64_t state = seed * 0x100000001b3ULL + chunk * 65'537;
  const auto uniform = [&] { return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53; };
  for (std::size_t i = 0; i < count; ++i) {
    const auto centre = static_cast<double>(splitmix64(state) % static_cast<std::uint64_t>(k));
    for (std::size_t x = 0; x < d; ++x)  // centre c sits at (c, 2c, 3c, ...) * 4
      p[i * d + x] = 4.0 * centre * static_cast<double>(x + 1) + uniform() + uniform() - 1.0;
  }
  return p;
}

Partial kmeans_partial(const Points& chunk, const std::vector<double>& centroids) {
  const auto k = static_cast<std::size_t>(centroids.at(0));
  const auto d = static_cast<std::size_t>(centroids.at(1));
  const double* c = centroids.data() + 2;
  Partial out(k * (d + 1), 0.0);
  for (std::size_t i = 0; i + d <= chunk.size(); i += d) {
    const double* x = &chunk[i];
    std::size_t best = 0;
    double best_dist = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < k; ++j) {
      double dist = 0;
      for (std::size_t a = 0; a < d; ++a) {
        const double diff = x[a] - c[j * d + a];
        dist += diff * diff;
      }
      if (dist < best_dist) best_dist = dist, best = j;
    }
    double* o = &out[best * (d + 1)];
    for (std::size_t a = 0; a < d; ++a) o[a] += x[a];
    o[d] += 1.0;
  }
  return out;
}

Partial kmeans_add(const Partial& a, const Partial& b) {
  if (a.size() != b.size()) throw std::invalid_argument("kmeans_add: sizes differ");
  Partial out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

std::vector<double> kmeans_update(const Partial& total, const std::vector<double>& old) {
  const auto k = static_cast<std::size_t>(old.at(0));
  const auto d = static_cast<std::size_t>(old.at(1));
  if (total.size() != k * (d + 1)) throw std::invalid_argument("kmeans_update: sizes differ");
  std::vector<double> out = old;
  for (std::size_t j = 0; j < k; ++j) {
    const double n = total[j * (d + 1) + d];
    if (n == 0) continue;
    for (std::size_t a = 0; a < d; ++a) out[2 + j * d + a] = total[j * (d + 1) + a] / n;
  }
  return out;
}

Keys sort_input(std::uint64_t seed, std::size_t part, std::size_t count) {
  Keys k(count);
  std::uint64_t state = seed * 0x100000001b3ULL + part * 1'000'003;
  for (auto& v : k) v = static_cast<std::int64_t>(splitmix64(state));
  return k;
}

Keys sort_local(const Keys& part) {
  Keys out = part;
  std::sort(out.begin(), out.end());
  return out;
}

Keys sort_sample(const Keys& sorted, std::int64_t samples) {
  Keys out;
  if (sorted.empty() || samples < 1) return out;
  const auto s = static_cast<std::size_t>(samples);
  for (std::size_t i = 0; i < s; ++i) out.push_back(sorted[(i * sorted.size()) / s]);
  return out;
}

Keys sort_splitters(const std::vector<Keys>& samples, std::int64_t parts) {
  Keys all;
  for (const auto& s : samples) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  Keys out;
  const auto p = static_cast<std::size_t>(parts);
  for (std::size_t j = 1; j < p && !all.empty(); ++j) out.push_back(all[(j * all.size()) / p]);
  return out;
}

std::vector<Keys> sort_split(const Keys& sorted, const Keys& splitters) {
  std::vector<Keys> pieces;
  auto from = sorted.begin();
  for (std::int64_t s : splitters) {
    const auto to = std::lower_bound(from, sorted.end(), s);
    pieces.emplace_back(from, to);
    from = to;
  }
  pieces.emplace_back(from, sorted.end());
  return pieces;
}

Keys sort_merge(const std::vector<Keys>& pieces) {
  if (pieces.size() < 2) return pieces.empty() ? Keys{} : pieces.front();
  // Pairwise, level by level: log2(P) passes over the keys.
  const auto merged = [](const Keys& a, const Keys& b) {
    Keys m(a.size() + b.size());
    std::merge(a.begin(), a.end(), b.begin(), b.end(), m.begin());
    return m;
  };
  std::vector<Keys> level;
  for (std::size_t i = 0; i + 1 < pieces.size(); i += 2)
    level.push_back(merged(pieces[i], pieces[i + 1]));
  if (pieces.size() % 2) level.push_back(pieces.back());
  return reduce_in_pairs(std::move(level), merged);
}

std::uint64_t keys_checksum(const Keys& keys) {
  std::uint64_t sum = 0;
  for (std::int64_t k : keys) {
    std::uint64_t s = static_cast<std::uint64_t>(k);
    sum += splitmix64(s);
  }
  return sum;
}

}  // namespace taskwire::bench::kernels

TASKWIRE_REGISTER(taskwire::bench::kernels::chol_tile);
TASKWIRE_REGISTER(taskwire::bench::kernels::chol_potrf);
TASKWIRE_REGISTER(taskwire::bench::kernels::chol_trsm);
TASKWIRE_REGISTER(taskwire::bench::kernels::chol_syrk);
TASKWIRE_REGISTER(taskwire::bench::kernels::chol_gemm);
TASKWIRE_REGISTER(taskwire::bench::kernels::kmeans_partial);
TASKWIRE_REGISTER(taskwire::bench::kernels::kmeans_add);
TASKWIRE_REGISTER(taskwire::bench::kernels::kmeans_update);
TASKWIRE_REGISTER(taskwire::bench::kernels::sort_local);
TASKWIRE_REGISTER(taskwire::bench::kernels::sort_sample);
TASKWIRE_REGISTER(taskwire::bench::kernels::sort_splitters);
TASKWIRE_REGISTER(taskwire::bench::kernels::sort_split);
TASKWIRE_REGISTER(taskwire::bench::kernels::sort_merge);
