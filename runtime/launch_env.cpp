#include <taskwire/runtime/launch_env.hpp>

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace taskwire::runtime {

namespace {

// One launcher's pair of variables, in the order they are trusted (launch_env.hpp says why).
struct Family {
  const char* rank;
  const char* size;
};
constexpr Family kFamilies[] = {{"PMI_RANK", "PMI_SIZE"},
                                {"PMIX_RANK", "PMIX_SIZE"},
                                {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                {"SLURM_PROCID", "SLURM_NTASKS"}};

}  // namespace

int env_number(const EnvLookup& env, const char* name) {
  const char* text = env(name);
  if (!text) return -1;
  int value = -1;
  const std::string_view s(text);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() && value >= 0 ? value : -1;
}

LaunchPosition launch_position(const EnvLookup& env) {
  LaunchPosition p;
  bool have_rank = false, have_size = false;
  for (const auto& f : kFamilies) {
    if (const int r = env_number(env, f.rank); !have_rank && r >= 0) p.rank = r, have_rank = true;
    if (const int s = env_number(env, f.size); !have_size && s > 0) p.size = s, have_size = true;
  }
  p.launched = have_rank || have_size;
  return p;
}

LaunchPosition launch_position() {
  return launch_position([](const char* name) { return std::getenv(name); });
}

}  // namespace taskwire::runtime
