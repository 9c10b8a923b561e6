# `cpack -G DEB` (in the build directory): one taskwire_VERSION_ARCH.deb with the programs,
# libtaskwire.so, the public headers, the CMake package and taskwire.pc, under /usr.
# Depends is what dpkg-shlibdeps (Debian's dpkg-dev) finds the binaries need; Recommends adds
# mpiexec.mpich (for taskwire-mpi and MPI launches) and the -dev packages find_package(taskwire)
# and taskwire.pc need to build a client.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "taskwire")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "taskwire maintainers <taskwire@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
  "mpich, libmpich-dev, libboost-dev, libboost-serialization-dev, libboost-program-options-dev, libfmt-dev, libspdlog-dev, libjemalloc-dev, pkg-config, openssl")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "${PROJECT_DESCRIPTION}\n taskwire-scheduler, taskwire-worker and taskwire-mpi, libtaskwire and its\n C++ headers, CMake package and pkg-config file.")
include(CPack)
