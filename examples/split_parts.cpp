// The exchange step of a sample sort: P partitions each split into P pieces by the same
// splitters, then output j merges piece j of every split (P*P pieces handed on). Three ways to
// hand piece j on, timed from the splits in memory to every merge done, on a scheduler and 2
// single-thread workers in this process:
//   pick by value   a task pick(std::vector<Pieces> split, j): a copy of the whole split
//                   per pick (what a decode per consumer cost before live values)
//   pick by const&  a task pick(const std::vector<Pieces>& split, j): reads the split in
//                   place, copies piece j (live values)
//   unpack          client.unpack(split, P): the built-in getitem task per piece, the same
//                   read in place, without a function of the user's
// Medians of --repeats runs; each run checks the outputs (counts, sums, order within and
// across them) against the input's.
//
//   ./split_parts [--n 4194304] [--parts 4] [--repeats 5] [--scheme tcp|inproc]
#include "examples/mapreduce_cluster.hpp"

#include <taskwire/runtime/log.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace split_parts {
using Piece = std::vector<std::int64_t>;

// Partition p of the input (n values drawn from seed p), cut by `splitters` into
// splitters.size() + 1 sorted pieces.
std::vector<Piece> split(std::uint64_t p, std::uint64_t n, const std::vector<std::int64_t>& splitters) {
  std::mt19937_64 rng(p);
  Piece values(n);
  for (auto& v : values) v = static_cast<std::int64_t>(rng() >> 1);
  std::sort(values.begin(), values.end());
  std::vector<Piece> pieces;
  auto from = values.begin();
  for (auto s : splitters) {
    auto to = std::lower_bound(from, values.end(), s);
    pieces.emplace_back(from, to);
    from = to;
  }
  pieces.emplace_back(from, values.end());
  return pieces;
}
Piece pick_copy(std::vector<Piece> whole, std::uint64_t j) { return std::move(whole.at(j)); }
Piece pick_ref(const std::vector<Piece>& whole, std::uint64_t j) { return whole.at(j); }
// Output j: what a merge of its pieces gives, checked without the merge itself (its cost is
// the same whichever way the pieces came): {count, sum, 1 if each piece is sorted and all lie
// between min and max, min, max}.
std::vector<std::int64_t> merge(const std::vector<Piece>& pieces) {
  std::int64_t count = 0, sorted = 1, lo = INT64_MAX, hi = INT64_MIN;
  std::uint64_t sum = 0;  // wraps: a checksum, not a total (signed overflow is undefined)
  for (const auto& p : pieces) {
    if (!std::is_sorted(p.begin(), p.end())) sorted = 0;
    for (auto v : p) sum += static_cast<std::uint64_t>(v);
    count += static_cast<std::int64_t>(p.size());
    if (!p.empty()) lo = std::min(lo, p.front()), hi = std::max(hi, p.back());
  }
  return {count, static_cast<std::int64_t>(sum), sorted, lo, hi};
}
}  // namespace split_parts

TASKWIRE_REGISTER(split_parts::split);
TASKWIRE_REGISTER(split_parts::pick_copy);
TASKWIRE_REGISTER(split_parts::pick_ref);
TASKWIRE_REGISTER(split_parts::merge);

namespace {
using namespace split_parts;
using taskwire::Future;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One exchange: hands piece j of every split to merge j, the way `how` says; waits for all.
std::vector<std::vector<std::int64_t>> exchange(taskwire::Client& client,
                                                const std::vector<Future<std::vector<Piece>>>& splits,
                                                const std::string& how) {
  const std::size_t parts = splits.size();
  std::vector<std::vector<Future<Piece>>> to(parts);  // to[j]: piece j of every split
  for (const auto& s : splits) {
    std::vector<Future<Piece>> pieces;
    if (how == "unpack") {
      pieces = client.unpack(s, parts);
    } else {
      for (std::uint64_t j = 0; j < parts; ++j)
        pieces.push_back(how == "pick by value" ? client.submit(pick_copy, s, j)
                                                : client.submit(pick_ref, s, j));
    }
    for (std::size_t j = 0; j < parts; ++j) to[j].push_back(pieces[j]);
  }
  std::vector<Future<std::vector<std::int64_t>>> merged;
  for (auto& pieces : to) merged.push_back(client.submit(merge, pieces));
  return client.gather(merged);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t n = std::uint64_t{1} << 22, parts = 4;
  int repeats = 5;
  std::string scheme = "tcp";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--n") n = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--parts") parts = std::max<std::uint64_t>(1, std::strtoull(argv[i + 1], nullptr, 10));
    else if (flag == "--repeats") repeats = std::max(1, std::atoi(argv[i + 1]));
    else if (flag == "--scheme") scheme = argv[i + 1];
    else return fmt::print(stderr, "unknown option {}\n", flag), 2;
  }
  taskwire::runtime::init_logging({"warn", "", -1});
  mapreduce::InProcessCluster cluster(scheme == "tcp" ? "tcp://127.0.0.1:0" : "inproc://auto", 2);
  auto& client = cluster.client();
  std::vector<std::int64_t> splitters;  // even cuts of the value range
  for (std::uint64_t j = 1; j < parts; ++j)
    splitters.push_back(static_cast<std::int64_t>((std::uint64_t{1} << 63) / parts * j));
  const std::uint64_t per = n / parts;
  std::int64_t expected_count = 0;
  std::uint64_t expected_sum = 0;  // wraps, as merge's
  for (std::uint64_t p = 0; p < parts; ++p)
    for (const auto& piece : split(p, per, splitters)) {
      expected_count += static_cast<std::int64_t>(piece.size());
      for (auto v : piece) expected_sum += static_cast<std::uint64_t>(v);
    }

  fmt::print("sample-sort exchange: {} int64 in {} partitions, {} pieces, 2 workers, {}\n",
             per * parts, parts, parts * parts, scheme);
  const std::vector<std::string> ways{"pick by value", "pick by const&", "unpack"};
  std::vector<std::vector<double>> seconds(ways.size());
  for (int r = 0; r < repeats; ++r) {
    for (std::size_t w = 0; w < ways.size(); ++w) {
      auto splits = client.map(split, std::vector<std::uint64_t>([&] {
                                 std::vector<std::uint64_t> ps(parts);
                                 for (std::uint64_t p = 0; p < parts; ++p) ps[p] = p;
                                 return ps;
                               }()),
                               taskwire::fixed(per), taskwire::fixed(splitters));
      client.wait(splits);
      const auto t0 = std::chrono::steady_clock::now();
      const auto outs = exchange(client, splits, ways[w]);
      seconds[w].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      std::int64_t count = 0, last = INT64_MIN;
      std::uint64_t sum = 0;
      for (const auto& o : outs) {
        count += o[0];
        sum += static_cast<std::uint64_t>(o[1]);
        if (o[2] != 1 || (o[0] > 0 && o[3] < last)) return fmt::print(stderr, "unsorted output\n"), 1;
        if (o[0] > 0) last = o[4];
      }
      if (count != expected_count || sum != expected_sum)
        return fmt::print(stderr, "wrong result ({}: count {} sum {})\n", ways[w], count, sum), 1;
    }
  }
  for (std::size_t w = 0; w < ways.size(); ++w)
    fmt::print("{:>15}: {:8.2f} ms (median of {})\n", ways[w], 1e3 * median(seconds[w]), repeats);
  client.shutdown();
  return 0;
}
