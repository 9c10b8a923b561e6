#include <taskwire/comm/mpi/ucx_defaults.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>

using taskwire::comm::mpi::default_rndv_threshold;
using taskwire::comm::mpi::launched_on_several_nodes;

namespace {
taskwire::runtime::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}
}  // namespace

TEST_CASE("ucx defaults: hydra's and Slurm's variables tell a job across nodes", "[runtime]") {
  CHECK_FALSE(launched_on_several_nodes(env_of({})));
  CHECK_FALSE(launched_on_several_nodes(env_of({{"MPI_LOCALNRANKS", "4"}, {"PMI_SIZE", "4"}})));
  CHECK(launched_on_several_nodes(env_of({{"MPI_LOCALNRANKS", "1"}, {"PMI_SIZE", "4"}})));
  CHECK_FALSE(launched_on_several_nodes(env_of({{"MPI_LOCALNRANKS", "x"}, {"PMI_SIZE", "4"}})));
  CHECK_FALSE(launched_on_several_nodes(env_of({{"SLURM_STEP_NUM_NODES", "1"}})));
  CHECK(launched_on_several_nodes(env_of({{"SLURM_STEP_NUM_NODES", "3"}})));
}

TEST_CASE("ucx defaults: eager up to 4 MiB only across nodes without RDMA devices",
          "[runtime]") {
  const auto one_node = env_of({{"MPI_LOCALNRANKS", "4"}, {"PMI_SIZE", "4"}});
  const auto two_nodes = env_of({{"MPI_LOCALNRANKS", "2"}, {"PMI_SIZE", "4"}});
  CHECK(default_rndv_threshold(one_node, false) == "65536");
  CHECK(default_rndv_threshold(one_node, true) == "65536");
  CHECK(default_rndv_threshold(two_nodes, false) == "4194304");
  CHECK(default_rndv_threshold(two_nodes, true) == "65536");
}

// runtime/launch_env.hpp: under `sbatch --wrap 'mpiexec.mpich -n 4 ...'` hydra starts the
// ranks through srun, so each one sees SLURM_PROCID=0 and the allocation's SLURM_NTASKS.
TEST_CASE("launch position: PMI's rank and size win over Slurm's", "[runtime]") {
  using taskwire::runtime::launch_position;
  const auto hydra_in_sbatch = launch_position(env_of(
      {{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}}));
  CHECK(hydra_in_sbatch.rank == 3);
  CHECK(hydra_in_sbatch.size == 4);
  CHECK(hydra_in_sbatch.launched);
  // A plain `srun -n 2 prog` (no PMI): Slurm's own are the ranks'.
  const auto srun = launch_position(env_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}));
  CHECK((srun.rank == 1 && srun.size == 2));
  const auto ompi = launch_position(env_of({{"OMPI_COMM_WORLD_RANK", "2"},
                                            {"OMPI_COMM_WORLD_SIZE", "5"},
                                            {"SLURM_PROCID", "0"}}));
  CHECK((ompi.rank == 2 && ompi.size == 5));
  const auto none = launch_position(env_of({}));
  CHECK((none.rank == 0 && none.size == 1 && !none.launched));
  const auto bad = launch_position(env_of({{"PMI_RANK", "x"}, {"SLURM_PROCID", "2"}}));
  CHECK(bad.rank == 2);
  // hydra's local count below PMI's size is a job across nodes, whatever SLURM_NTASKS says.
  CHECK(launched_on_several_nodes(env_of(
      {{"MPI_LOCALNRANKS", "2"}, {"PMI_SIZE", "4"}, {"SLURM_NTASKS", "1"}})));
  CHECK_FALSE(launched_on_several_nodes(env_of(
      {{"MPI_LOCALNRANKS", "4"}, {"PMI_SIZE", "4"}, {"SLURM_NTASKS", "8"}})));
}
