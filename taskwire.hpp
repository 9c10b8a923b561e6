#pragma once
// taskwire: the umbrella header for programs using the runtime.
#include <taskwire/comm/backends.hpp>
#include <taskwire/comm/core/connect.hpp>
#include <taskwire/runtime/context.hpp>
#include <taskwire/runtime/log.hpp>
#include <taskwire/runtime/serialize.hpp>
