#include <taskwire/runtime/ucx_defaults.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>

using taskwire::runtime::default_rndv_threshold;
using taskwire::runtime::launched_on_several_nodes;

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
