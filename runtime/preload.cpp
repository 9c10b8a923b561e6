#include <taskwire/runtime/preload.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <dlfcn.h>
#include <stdexcept>

namespace taskwire::runtime {

void preload_library(const std::string& path) {
  if (!::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = ::dlerror();
    throw std::runtime_error(fmt::format("--preload {}: cannot load the library: {}", path,
                                         why ? why : "unknown error"));
  }
  spdlog::info("preloaded {}", path);
}

}  // namespace taskwire::runtime
