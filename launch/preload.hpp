#pragma once
// Loading a user's shared library so the functions it TASKWIRE_REGISTERs become callable in
// this process (taskwire-worker --preload, taskwire-mpi --preload).
#include <cstddef>
#include <string>

namespace taskwire::launch {

/// dlopen(RTLD_NOW | RTLD_GLOBAL); the handle is never closed, since registered functions
/// must stay valid for the whole run. Returns how many functions the library registered,
/// logged at info level with their names at debug level; a library that registered none
/// (it has no TASKWIRE_REGISTER, or it was loaded already) gets a warning saying so.
/// Throws std::runtime_error with dlerror()'s reason.
std::size_t preload_library(const std::string& path);

}  // namespace taskwire::launch
