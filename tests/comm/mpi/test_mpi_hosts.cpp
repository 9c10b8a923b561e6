// comm::mpi::crowded_ranks and same_kernel (mpi_hosts.hpp) on hand-made identity records.
#include <taskwire/comm/mpi/mpi_hosts.hpp>

#include <catch2/catch.hpp>

#include <cstring>
#include <string>

namespace {

using taskwire::comm::mpi::HostIdentity;

HostIdentity rank_on(const std::string& boot_id, int cores, int node) {
  HostIdentity id;
  id.node = node;
  id.cores = cores;
  std::strncpy(id.boot_id, boot_id.c_str(), sizeof id.boot_id - 1);
  return id;
}

}  // namespace

TEST_CASE("ranks on one kernel share its cores, whatever node MPI says they are on", "[runtime][hosts]") {
  // Four emulated hosts on one 2-core machine (one boot id), and a real second machine.
  const std::vector<HostIdentity> all{rank_on("machine-a", 2, 0), rank_on("machine-a", 2, 1),
                                      rank_on("machine-a", 2, 2), rank_on("machine-b", 8, 3),
                                      rank_on("machine-a", 2, 4)};
  CHECK(taskwire::comm::mpi::same_kernel(all[0], all[2]));
  CHECK_FALSE(taskwire::comm::mpi::same_kernel(all[0], all[3]));
  const auto crowded = taskwire::comm::mpi::crowded_ranks(all);
  REQUIRE(crowded.size() == all.size());
  CHECK(crowded == std::vector<bool>{true, true, true, false, true});
}

TEST_CASE("a rank is crowded only when its kernel runs more ranks than it has cores", "[runtime][hosts]") {
  using taskwire::comm::mpi::crowded_ranks;
  CHECK(crowded_ranks({rank_on("m", 2, 0), rank_on("m", 2, 0)}) == std::vector<bool>{false, false});
  CHECK(crowded_ranks({rank_on("m", 1, 0), rank_on("m", 1, 0)}) == std::vector<bool>{true, true});
  // An unreadable boot id matches nothing: each such rank counts only itself.
  CHECK(crowded_ranks({rank_on("", 1, 0), rank_on("", 1, 1)}) == std::vector<bool>{false, false});
  // A record without a core count counts one core.
  CHECK(crowded_ranks({rank_on("m", 0, 0), rank_on("m", 0, 1)}) == std::vector<bool>{true, true});
  CHECK(taskwire::comm::mpi::available_cores() >= 1);
}
