#pragma once
#include <string>

namespace taskwire::runtime {

/// 128 bits from the operating system's random source, as 22 URL-safe base64 characters.
/// Names that must never meet by accident carry one: a client's keys are
/// "<function>-<client id>-<n>", and a pid or a user-chosen name is not unique across
/// containers, hosts or two clients in one process (Dask names clients with a UUID).
/// Thread-safe.
std::string random_id_128();

}  // namespace taskwire::runtime
