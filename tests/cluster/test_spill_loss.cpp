// Spilled results whose files are deleted, cut short or changed under a running graph: every
// result is still right (the lost keys are computed again), never wrong, never an error.
#include "tests/cluster/cluster_fixture.hpp"
#include "tests/cluster/cluster_functions.hpp"

#include <taskwire/client/client.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace taskwire;
using namespace std::chrono_literals;
using test::Cluster;

namespace {

// Every result spills at once: a limit with a target of a few bytes, the process thresholds
// off (the test process's own memory must not pause or end the workers).
void spill_everything(worker::WorkerOptions& o) {
  o.memory.limit = 1ull << 30;
  o.memory.target = 1e-9;
  o.memory.spill = o.memory.pause = o.memory.terminate = 0;
}

std::vector<std::filesystem::path> spill_files(Cluster& cl) {
  std::vector<std::filesystem::path> files;
  for (auto& w : cl.workers)
    for (const auto& e :
         std::filesystem::directory_iterator(w->data().spill_options().directory))
      if (e.path().filename().string().rfind("spill-", 0) == 0) files.push_back(e.path());
  return files;
}

void damage(const std::filesystem::path& file, int how) {
  if (how == 0) {
    std::filesystem::remove(file);
  } else if (how == 1) {
    std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  } else {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(10);
    f.write("#", 1);  // a blob holds letters only: the byte differs
  }
}

}  // namespace

TEST_CASE("cluster: spill files deleted, truncated or corrupted under a graph: every result "
          "right", "[cluster][spill]") {
  Cluster cl(0);
  cl.add_worker(1, spill_everything);
  cl.add_worker(1, spill_everything);
  REQUIRE(cl.wait_workers(2));
  Client client(cl.fx.registry(), cl.address);
  constexpr int kParts = 24;
  std::vector<Future<std::string>> parts;
  for (int i = 0; i < kParts; ++i) parts.push_back(client.submit(cluster_fns::blob, 64, i));
  for (auto& p : parts) REQUIRE(p.wait_for(30s));
  const auto files = spill_files(cl);
  REQUIRE(files.size() >= kParts / 2);  // the results live on disk, not in memory
  for (std::size_t i = 0; i < files.size(); ++i) damage(files[i], static_cast<int>(i % 3));
  // Dependents read them on their workers, across workers, and the client fetches them.
  std::vector<Future<std::string>> pairs;
  for (int i = 0; i < kParts; ++i)
    pairs.push_back(client.submit(cluster_fns::concat, parts[i], parts[(i + 1) % kParts]));
  const auto joined = client.gather(pairs);
  const auto direct = client.gather(parts);
  bool right = true;
  for (int i = 0; i < kParts; ++i) {
    const std::string a = cluster_fns::blob(64, i), b = cluster_fns::blob(64, (i + 1) % kParts);
    right = right && direct[i] == a && joined[i] == a + b;
  }
  CHECK(right);
  std::uint64_t losses = 0;
  for (auto& w : cl.workers) losses += w->data().counts().spill_losses_total;
  CHECK(losses > 0);  // the damage was seen, and survived
}
