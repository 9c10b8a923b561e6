#pragma once
// The kernels of `taskwire-bench workloads`, plain loops, each registered as a task function
// and called directly by the same workloads on std::threads: a cluster run and a threads run
// do the same floating-point operations in the same order, so their results are equal bit for
// bit. Big inputs are taken by `const&` (a worker hands a held value in place).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace taskwire::bench::kernels {

/// A b x b tile of a matrix, row-major; b is sqrt(size()).
using Tile = std::vector<double>;
/// Points of k-means, `dims` doubles each, one after the other.
using Points = std::vector<double>;
/// Centroids: k, dims, then the k * dims coordinates (the layout tells a task both counts).
using Centroids = std::vector<double>;
/// Per centroid, the sum of its points' coordinates then their count: k * (dims + 1) doubles.
using Partial = std::vector<double>;
using Keys = std::vector<std::int64_t>;

// Tiled Cholesky (lower): A = L L^T.
/// Tile (i, j), j <= i, of the N x N symmetric positive definite matrix of `seed` (entries in
/// [-1, 1) off the diagonal, N + 1 on it), N = tiles * b.
Tile chol_tile(std::uint64_t seed, int tiles, int b, int i, int j);
/// L_kk of A_kk (its upper triangle zero).
Tile chol_potrf(const Tile& a);
/// L_ik = A_ik L_kk^-T.
Tile chol_trsm(const Tile& l_kk, const Tile& a_ik);
/// A_ii - L_ik L_ik^T, the lower triangle only (potrf reads no more).
Tile chol_syrk(const Tile& a_ii, const Tile& l_ik);
/// A_ij - L_ik L_jk^T.
Tile chol_gemm(const Tile& a_ij, const Tile& l_ik, const Tile& l_jk);

// k-means.
/// `count` points of `dims` coordinates around `k` centres, the same for the same arguments.
Points kmeans_points(std::uint64_t seed, std::size_t chunk, std::size_t count, int dims, int k);
/// Per centroid, the sum and count of the points of `chunk` nearest to it.
Partial kmeans_partial(const Points& chunk, const Centroids& centroids);
Partial kmeans_add(const Partial& a, const Partial& b);
/// The new centroids (a centroid without points stays where it was).
Centroids kmeans_update(const Partial& total, const Centroids& old);

// Sample sort.
/// `count` uniform int64 of part `part`.
Keys sort_input(std::uint64_t seed, std::size_t part, std::size_t count);
Keys sort_local(const Keys& part);
/// `samples` keys of a sorted part at even distances.
Keys sort_sample(const Keys& sorted, std::int64_t samples);
/// parts - 1 splitters from every part's samples.
Keys sort_splitters(const std::vector<Keys>& samples, std::int64_t parts);
/// A sorted part cut at the splitters: piece j holds the keys in [splitter j-1, splitter j).
std::vector<Keys> sort_split(const Keys& sorted, const Keys& splitters);
/// The sorted pieces merged into one.
Keys sort_merge(const std::vector<Keys>& pieces);

/// A checksum that a permutation keeps and a changed, lost or extra key does not (with
/// overwhelming likelihood): the sum of a hash of each key.
std::uint64_t keys_checksum(const Keys& keys);

}  // namespace taskwire::bench::kernels
