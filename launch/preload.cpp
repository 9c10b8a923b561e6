#include <taskwire/launch/preload.hpp>

#include <taskwire/runtime/function_registry.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <dlfcn.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace taskwire::launch {

std::size_t preload_library(const std::string& path) {
  const bool loaded_before = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD) != nullptr;
  auto before = runtime::FunctionRegistry::global().names();
  if (!::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = ::dlerror();
    throw std::runtime_error(fmt::format("--preload {}: cannot load the library: {}", path,
                                         why ? why : "unknown error"));
  }
  auto after = runtime::FunctionRegistry::global().names();
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  std::vector<std::string> added;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                      std::back_inserter(added));
  if (added.empty() && loaded_before) {
    spdlog::warn("--preload {}: the library was loaded already (linked into this program or "
                 "preloaded twice); it registered nothing new",
                 path);
  } else if (added.empty()) {
    spdlog::warn("--preload {}: the library registered no functions: did you link it with "
                 "TASKWIRE_REGISTER(function) in one of its source files, and build it from "
                 "those files?",
                 path);
  } else {
    spdlog::info("preloaded {}: {} function{} registered", path, added.size(),
                 added.size() == 1 ? "" : "s");
    spdlog::debug("preloaded {}: {}", path, fmt::join(added, ", "));
  }
  return added.size();
}

}  // namespace taskwire::launch
