#pragma once
// The mpi:// scheme fixture (tests/comm/fixture.hpp) and what MPI-specific tests need from it.
#include "tests/comm/fixture.hpp"

#include <taskwire/comm/mpi/mpi_environment.hpp>

namespace taskwire::test {

/// The fixture's MPI environment (creates the fixture, and so MPI, on first use).
mpi::MpiEnvironment& mpi_env();

}  // namespace taskwire::test
