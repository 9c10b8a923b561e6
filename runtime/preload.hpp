#pragma once
// Loading a user's shared library so the functions it TASKWIRE_REGISTERs become callable in
// this process (taskwire-worker --preload, taskwire-mpi --preload).
#include <string>

namespace taskwire::runtime {

/// dlopen(RTLD_NOW | RTLD_GLOBAL); the handle is never closed, since registered functions
/// must stay valid for the whole run. Throws std::runtime_error with dlerror()'s reason.
void preload_library(const std::string& path);

}  // namespace taskwire::runtime
