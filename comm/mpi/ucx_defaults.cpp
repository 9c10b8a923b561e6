#include <taskwire/comm/mpi/ucx_defaults.hpp>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace taskwire::comm::mpi {

bool launched_on_several_nodes(const runtime::EnvLookup& env) {
  const long local = runtime::env_number(env, "MPI_LOCALNRANKS");
  if (local > 0 && local < runtime::launch_position(env).size) return true;
  return runtime::env_number(env, "SLURM_STEP_NUM_NODES") > 1;
}

std::string default_rndv_threshold(const runtime::EnvLookup& env, bool rdma_devices) {
  return launched_on_several_nodes(env) && !rdma_devices ? "4194304" : "65536";
}

bool has_rdma_devices() {
  std::error_code ec;
  std::filesystem::directory_iterator devices("/sys/class/infiniband", ec);
  return !ec && devices != std::filesystem::directory_iterator();
}

void apply_ucx_defaults() {
  if (std::getenv("UCX_RNDV_THRESH")) return;
  const auto value = default_rndv_threshold([](const char* n) { return std::getenv(n); },
                                            has_rdma_devices());
  if (::setenv("UCX_RNDV_THRESH", value.c_str(), /*overwrite=*/0) != 0)
    spdlog::warn("could not set UCX_RNDV_THRESH: {}", std::strerror(errno));
}

}  // namespace taskwire::comm::mpi
