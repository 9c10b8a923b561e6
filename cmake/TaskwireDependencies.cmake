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
# nlohmann-json (Debian's nlohmann-json3-dev, header-only): the dashboard's /json answers.
find_package(nlohmann_json 3 REQUIRED)
# OpenSSL (Debian's libssl-dev), linked privately (no public header includes it): libcrypto
# for the handshake's HMAC-SHA256, nonces and constant-time comparison; libssl for tls://.
find_package(OpenSSL 1.1.1 REQUIRED)

# The allocator of every program linking taskwire: jemalloc's thread caches cost a scheduler
# rank far fewer instructions than glibc's malloc (docs/measurements.md, "jemalloc").
# TASKWIRE_MALLOC is the allocator in effect: sanitizer builds keep the system one (the
# sanitizer replaces malloc itself), whatever TASKWIRE_ALLOCATOR says.
set(TASKWIRE_ALLOCATOR "jemalloc" CACHE STRING
  "malloc of taskwire's programs: jemalloc (Debian's libjemalloc-dev) or system")
set_property(CACHE TASKWIRE_ALLOCATOR PROPERTY STRINGS jemalloc system)
if(NOT TASKWIRE_ALLOCATOR MATCHES "^(jemalloc|system)$")
  message(FATAL_ERROR "taskwire: TASKWIRE_ALLOCATOR is '${TASKWIRE_ALLOCATOR}'; use jemalloc or system")
endif()
set(TASKWIRE_MALLOC "${TASKWIRE_ALLOCATOR}")
include(TaskwireSanitizers)
taskwire_sanitizer_build(_tw_sanitized)
if(TASKWIRE_MALLOC STREQUAL "jemalloc" AND _tw_sanitized)
  message(STATUS "taskwire: sanitizer build, using the system allocator")
  set(TASKWIRE_MALLOC "system")
endif()
if(TASKWIRE_MALLOC STREQUAL "jemalloc")
  find_library(TASKWIRE_JEMALLOC_LIBRARY NAMES jemalloc)
  if(NOT TASKWIRE_JEMALLOC_LIBRARY)
    message(FATAL_ERROR "taskwire: jemalloc not found: install libjemalloc-dev "
      "(third_party/install-deps.sh does) or configure with -DTASKWIRE_ALLOCATOR=system")
  endif()
endif()
