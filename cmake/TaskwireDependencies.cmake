# Finds taskwire's dependencies, all from Debian's packages (third_party/install-deps.sh).
find_package(Threads REQUIRED)

# Always MPICH: once Open MPI is also installed, the unsuffixed wrappers may point at it.
if(NOT MPI_C_COMPILER AND EXISTS /usr/bin/mpicc.mpich)
  set(MPI_C_COMPILER /usr/bin/mpicc.mpich CACHE FILEPATH "MPICH C wrapper")
endif()
if(NOT MPIEXEC_EXECUTABLE AND EXISTS /usr/bin/mpiexec.mpich)
  set(MPIEXEC_EXECUTABLE /usr/bin/mpiexec.mpich CACHE FILEPATH "MPICH launcher")
endif()
find_package(MPI REQUIRED COMPONENTS C)

find_package(Boost 1.74 REQUIRED COMPONENTS serialization program_options)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
